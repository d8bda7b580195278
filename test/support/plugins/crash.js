// A middleware whose access throws a plain Error (not a GatewayError): the
// request is refused with the contract's 500 and never forwarded.
export default {
  apiVersion: 1,
  name: 'crash',
  priority: 400,
  create() {
    return {
      access() {
        throw new Error('secret-looking detail that must not reach the caller');
      },
    };
  },
};
