/**
 * The federated credential kinds as POST /v1/credentials takes them: no secret field at all,
 * `federated` a plain flag ("true" or JSON true, shown as "true"), each cloud's identifying fields
 * (Bedrock `role_arn`, Azure `tenant_id` + `client_id`, Vertex `workload_identity_provider` and an
 * optional `service_account` email, shown). Anything mixed (a key with `federated`, a federated field
 * without it, a missing one, a malformed one) is a 400 naming the field; a federated credential has
 * nothing to rotate.
 */
import test from 'ava';
import { api } from '../support/app.js';
import { federationFixture, POOL_PROVIDER, ROLE_ARN, SERVICE_ACCOUNT, type Cloud } from '../support/cloud/federation-fixture.js';

test('each kind is stored with no secret and shown with its plain fields; federated is "true" whether sent as a string or JSON true', async (t) => {
  const f = await federationFixture(t);
  for (const cloud of ['bedrock', 'azure', 'vertex', 'vertex-sa'] as Cloud[]) {
    for (const flag of [true, 'true']) {
      const r = await api(f.app, 'POST', '/v1/credentials', { token: f.orgA.token, body: { ...f.body(cloud), federated: flag } });
      t.is(r.status, 201, `${cloud} ${JSON.stringify(flag)}: ${r.text}`);
      t.is(r.body.federated, 'true');
      t.is(r.body.key_hint, '…', 'no secret to hint at');
      const shown = await api(f.app, 'GET', `/v1/credentials/${r.body.id}`, { token: f.orgA.token });
      for (const [field, value] of Object.entries(f.body(cloud))) if (field !== 'provider' && field !== 'federated') t.is(shown.body[field], value, `${cloud}: ${field} shown`);
    }
  }
  const sa = await api(f.app, 'POST', '/v1/credentials', { token: f.orgA.token, body: f.body('vertex-sa') });
  t.is(sa.body.service_account, SERVICE_ACCOUNT, 'the impersonated account is shown, not sealed');
  const rotate = await api(f.app, 'POST', `/v1/credentials/${sa.body.id}/rotate`, { token: f.orgA.token, body: {} });
  t.is(rotate.status, 400);
  t.regex(rotate.body.error.message, /nothing to rotate/);
});

test('mixed, missing or malformed federated fields are 400 naming the field; nothing is stored', async (t) => {
  const f = await federationFixture(t);
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ provider: 'bedrock', region: 'eu-west-3', role_arn: ROLE_ARN, federated: true, aws_access_key_id: 'AKIAKEYWARDTEST0001', aws_secret_access_key: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYzz9secret01' }, 'aws_access_key_id'],
    [{ provider: 'bedrock', region: 'eu-west-3', federated: true }, 'role_arn'],
    [{ provider: 'bedrock', region: 'eu-west-3', role_arn: ROLE_ARN }, 'role_arn'],
    [{ provider: 'bedrock', region: 'eu-west-3', role_arn: 'arn:aws:iam::12345:role/x', federated: true }, 'role_arn'],
    [{ provider: 'bedrock', region: 'eu-west-3', role_arn: ROLE_ARN, federated: 'yes' }, 'federated'],
    [{ provider: 'bedrock', region: 'eu-west-3', role_arn: ROLE_ARN, federated: false }, 'federated'],
    [{ provider: 'azure', resource: 'my-res', tenant_id: '72f988bf-86f1-41af-91ab-2d7cd011db47', client_id: '0f2b6e3a-4c1d-4e5f-9a8b-7c6d5e4f3a2b', federated: true, api_key: 'az-key-0123456789' }, 'api_key'],
    [{ provider: 'azure', resource: 'my-res', client_id: '0f2b6e3a-4c1d-4e5f-9a8b-7c6d5e4f3a2b', federated: true }, 'tenant_id'],
    [{ provider: 'azure', resource: 'my-res', tenant_id: '72f988bf-86f1-41af-91ab-2d7cd011db47', client_id: 'not-a-guid', federated: true }, 'client_id'],
    [{ provider: 'azure', resource: 'my-res', api_key: 'az-key-0123456789', tenant_id: '72f988bf-86f1-41af-91ab-2d7cd011db47' }, 'tenant_id'],
    [{ provider: 'azure', resource: 'my-res' }, 'api_key'],
    [{ provider: 'vertex', project: 'my-proj-123', location: 'us-central1', federated: true }, 'workload_identity_provider'],
    [{ provider: 'vertex', project: 'my-proj-123', location: 'us-central1', workload_identity_provider: '//iam.googleapis.com/projects/x/locations/global/workloadIdentityPools/p/providers/q', federated: true }, 'workload_identity_provider'],
    [{ provider: 'vertex', project: 'my-proj-123', location: 'us-central1', workload_identity_provider: POOL_PROVIDER }, 'workload_identity_provider'],
    [{ provider: 'vertex', project: 'my-proj-123', location: 'us-central1', workload_identity_provider: POOL_PROVIDER, federated: true, service_account: 'someone@example.com' }, 'service_account'],
    [{ provider: 'vertex', project: 'my-proj-123', location: 'us-central1', workload_identity_provider: POOL_PROVIDER, federated: true, ambient: true }, 'ambient'],
  ];
  for (const [body, param] of cases) {
    const r = await api(f.app, 'POST', '/v1/credentials', { token: f.orgA.token, body });
    t.is(r.status, 400, JSON.stringify(body));
    t.is(r.body.error.code, 'invalid_request');
    t.is(r.body.error.param, param, JSON.stringify(body));
    t.false(r.text.includes('secret01'), 'a secret given by mistake is never echoed');
  }
  t.is((await api(f.app, 'GET', '/v1/credentials', { token: f.orgA.token })).body.data.length, 0);
});

test('a key credential works as before on the providers that gained federated kinds (azure api-key, vertex ambient as JSON true)', async (t) => {
  const f = await federationFixture(t);
  const azure = await api(f.app, 'POST', '/v1/credentials', { token: f.orgA.token, body: { provider: 'azure', resource: 'my-res', api_key: 'az-key-0123456789' } });
  t.is(azure.status, 201);
  t.is(azure.body.key_hint, '…6789');
  t.is(azure.body.federated, undefined);
  const ambient = await api(f.app, 'POST', '/v1/credentials', { token: f.orgA.token, body: { provider: 'vertex', project: 'my-proj-123', location: 'us-central1', ambient: true } });
  t.is(ambient.status, 201, ambient.text);
  t.is(ambient.body.ambient, 'true');
});
