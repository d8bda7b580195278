// A middleware whose log hook throws (synchronously on odd calls, a rejection on even ones):
// the response must not notice.
export default {
  apiVersion: 1,
  name: 'explode',
  priority: 400,
  create() {
    let calls = 0;
    return {
      log() {
        calls++;
        if (calls % 2 === 1) throw new Error('log exploded (sync)');
        return Promise.reject(new Error('log exploded (async)'));
      },
    };
  },
};
