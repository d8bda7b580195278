// A middleware whose onRequest throws a plain Error (not a GatewayError): the
// request is refused with the contract's 500 and never forwarded.
export default class CrashPlugin {
  name = 'crash';

  onRequest() {
    throw new Error('secret-looking detail that must not reach the caller');
  }
}
