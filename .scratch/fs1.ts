import { FirestoreServer } from '@firestore-emulator/server';
import { Firestore, FieldValue } from '@google-cloud/firestore';
import { createRequire } from 'node:module';
const require = createRequire(import.meta.resolve('@firestore-emulator/server'));
const grpc = require('@grpc/grpc-js');
const srv = new FirestoreServer();
const port: number = await new Promise((res, rej) => (srv as any).server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e: any, p: number) => e ? rej(e) : res(p)));
console.log('port', port);
const db = new Firestore({ projectId: 'keyward-local', host: `127.0.0.1:${port}`, ssl: false });
const a = db.collection('a');
await a.doc('x').create({ n: 1, s: '001|b' });
try { await a.doc('x').create({ n: 2 }); } catch (e: any) { console.log('create again', e.code); }
await a.doc('y').create({ n: 2, s: '002|a', org: 'o' });
await a.doc('z').create({ n: 3, s: '003|a', org: 'o' });
const q = await a.where('org', '==', 'o').where('s', '<', '003').orderBy('s', 'desc').limit(5).get();
console.log('query', q.docs.map((d) => d.id));
const q2 = await a.orderBy('s', 'desc').startAfter('003|a').limit(5).get();
console.log('startAfter (ignored?)', q2.docs.map((d) => d.id));
try { await a.doc('nope').delete({ exists: true }); } catch (e: any) { console.log('delete nonexist', e.code); }
await a.doc('y').delete({ exists: true }); console.log('deleted y');
const b = db.batch(); b.delete(a.doc('nope2'), { exists: true }); b.create(a.doc('w'), { n: 9 });
try { await b.commit(); } catch (e: any) { console.log('batch failed', e.code, (await a.doc('w').get()).exists); }
await a.doc('c').set({ v: FieldValue.increment(2) }, { merge: true });
await a.doc('c').set({ v: FieldValue.increment(3) }, { merge: true });
console.log('inc', (await a.doc('c').get()).data());
const sub = db.collection('p').doc('q').collection('r');
await sub.doc('1').create({ seq: 1 }); await sub.doc('2').create({ seq: 2 });
console.log('sub', (await sub.orderBy('seq', 'desc').limit(1).get()).docs.map((d) => d.id));
const cnt = await a.where('org', '==', 'o').count().get(); console.log('count', cnt.data().count);
const t0 = Date.now();
const unsub = db.collection('changes').where('at', '>', t0 - 1000).orderBy('at').onSnapshot((s) => {
  console.log('snap', Date.now() - t0, s.docChanges().map((c) => c.type + ':' + c.doc.id));
}, (e) => console.log('snap err', e));
await new Promise((r) => setTimeout(r, 300));
await db.collection('changes').doc('c1').create({ at: Date.now(), kind: 'token' });
await new Promise((r) => setTimeout(r, 300));
await db.collection('other').doc('c1').create({ at: Date.now() });
await db.collection('changes').doc('c2').create({ at: Date.now(), kind: 'token' });
await new Promise((r) => setTimeout(r, 300));
await db.collection('changes').doc('c1').delete();
await new Promise((r) => setTimeout(r, 300));
const gets = await db.getAll(a.doc('x'), a.doc('nope'));
console.log('getAll', gets.map((g) => g.exists));
unsub();
await db.terminate();
srv.stop();
