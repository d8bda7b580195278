// A middleware whose onDone throws (synchronously on odd calls, a rejection on even ones):
// the response must not notice.
export default class ExplodePlugin {
  name = 'explode';
  calls = 0;

  onDone() {
    this.calls++;
    if (this.calls % 2 === 1) throw new Error('onDone exploded (sync)');
    return Promise.reject(new Error('onDone exploded (async)'));
  }
}
