/**
 * Test support: a real, certified OpenID provider (`oidc-provider` from the registry) on 127.0.0.1 and a
 * free port, with one confidential client for Keyward (authorization code, refresh and the device grant).
 * Who signs in is set by the test (`nextPerson`): the provider's interaction pages are answered here at
 * once for that person (login and consent), so a browser, or `signInAt` below without one, goes straight
 * back to the relying party. Its ID tokens carry `email`, `email_verified`, `name` and `groups`.
 * `FrontDoor` is a TCP forwarder opened first on a free port, so a gateway started after it can be given
 * its public URL (where the provider redirects back to) before it listens itself. `deviceFlow: false` makes a
 * provider without the device grant; `intercept` lets a test answer one of the provider's requests itself (a
 * tampering proxy in front of its token endpoint).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

export interface Person {
  sub: string;
  email: string;
  name: string;
  groups: string[];
  emailVerified?: boolean;
}

export interface TestProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Who the next sign-in is (what the login interaction answers). */
  nextPerson: Person;
  provider: Provider;
  /** Answers a request in the provider's place when it returns true. */
  intercept?: ((req: IncomingMessage, res: ServerResponse) => boolean) | undefined;
  close(): Promise<void>;
}

export interface ProviderOptions {
  redirectUri: string;
  clientId?: string;
  clientSecret?: string;
  otherClients?: Array<{ id: string; secret: string }>;
  /** Whether it offers the device authorization grant (default true). */
  deviceFlow?: boolean;
}

export async function startProvider(options: ProviderOptions): Promise<TestProvider> {
  const clientId = options.clientId ?? 'keyward';
  const clientSecret = options.clientSecret ?? 'kw-client-secret-e8c1f0b27d4a4b6f9d2e';
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const people = new Map<string, Person>();
  const deviceFlow = options.deviceFlow ?? true;
  const clients = [client(clientId, clientSecret, options.redirectUri, deviceFlow), ...(options.otherClients ?? []).map((c) => client(c.id, c.secret, options.redirectUri, deviceFlow))];
  const state = { nextPerson: { sub: 'alice', email: 'alice@acme.test', name: 'Alice', groups: ['engineers'] } as Person };
  const provider = new Provider(issuer, {
    clients,
    cookies: { keys: ['test-cookie-key-0123456789abcdef'] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'groups'] },
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: false }, deviceFlow: { enabled: deviceFlow }, revocation: { enabled: true } },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    findAccount: async (_ctx: unknown, sub: string) => {
      const p = people.get(sub);
      if (!p) return undefined;
      return {
        accountId: sub,
        claims: async () => ({ sub, email: p.email, email_verified: p.emailVerified ?? true, name: p.name, groups: p.groups }),
      };
    },
    ttl: { DeviceCode: 600, AccessToken: 3600, IdToken: 3600, Interaction: 600, Session: 3600, Grant: 3600, AuthorizationCode: 60 },
  } as never);
  const handler = provider.callback();
  const hooks: { intercept?: ((req: IncomingMessage, res: ServerResponse) => boolean) | undefined } = {};
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (hooks.intercept?.(req, res)) return;
    if (req.url?.startsWith('/interaction/')) {
      void interact(provider, req, res, state.nextPerson, people).catch((err: unknown) => {
        res.statusCode = 500;
        res.end(String(err));
      });
      return;
    }
    handler(req, res);
  });
  return {
    issuer,
    clientId,
    clientSecret,
    get nextPerson() {
      return state.nextPerson;
    },
    set nextPerson(p: Person) {
      state.nextPerson = p;
    },
    provider,
    get intercept() {
      return hooks.intercept;
    },
    set intercept(fn) {
      hooks.intercept = fn;
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

function client(clientId: string, clientSecret: string, redirectUri: string, deviceFlow: boolean) {
  return {
    client_id: clientId, client_secret: clientSecret, redirect_uris: [redirectUri], response_types: ['code'],
    grant_types: ['authorization_code', 'refresh_token', ...(deviceFlow ? ['urn:ietf:params:oauth:grant-type:device_code'] : [])],
    token_endpoint_auth_method: 'client_secret_basic',
  };
}

/** The login and consent prompts, answered at once for `person`. */
async function interact(provider: Provider, req: IncomingMessage, res: ServerResponse, person: Person, people: Map<string, Person>): Promise<void> {
  const details = await provider.interactionDetails(req, res);
  const prompt = details.prompt.name;
  if (prompt === 'login') {
    people.set(person.sub, person);
    await provider.interactionFinished(req, res, { login: { accountId: person.sub } }, { mergeWithLastSubmission: false });
    return;
  }
  const accountId = details.session!.accountId;
  const params = details.params as { client_id: string; scope?: string };
  const grant = details.grantId ? (await provider.Grant.find(details.grantId))! : new provider.Grant({ accountId, clientId: params.client_id });
  grant.addOIDCScope(params.scope ?? 'openid');
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

export interface FrontDoor {
  url: string;
  /** Where connections go from now on. */
  target(port: number): void;
  close(): Promise<void>;
}

export async function startFrontDoor(): Promise<FrontDoor> {
  let targetPort: number | undefined;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((inbound) => {
    sockets.add(inbound);
    inbound.on('close', () => sockets.delete(inbound));
    if (targetPort === undefined) return inbound.destroy();
    const outbound = net.connect(targetPort, '127.0.0.1');
    sockets.add(outbound);
    outbound.on('close', () => sockets.delete(outbound));
    inbound.pipe(outbound).pipe(inbound);
    inbound.on('error', () => outbound.destroy());
    outbound.on('error', () => inbound.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    target: (port) => { targetPort = port; },
    close: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    }),
  };
}
