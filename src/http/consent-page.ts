/**
 * The pages of Keyward's authorization endpoint, as HTML with everything escaped: sign in (an org token or admin
 * key pasted, as the console takes them), consent (the MCP server's tools as checkboxes, each allowed by default,
 * Allow and Deny), and an error page (a client or redirect URI Keyward will not send anyone to). Each page's form
 * carries the authorization request's parameters back as hidden fields (they are checked again on every post).
 * Served with a CSP that allows no script and no framing, and no-store.
 */
import type { ServerResponse } from 'node:http';

export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;color:#1b1b1b}
h1{font-size:1.4rem}label{display:block;margin:.4rem 0}input[type=password]{width:100%;padding:.5rem;font:inherit;box-sizing:border-box}
button{font:inherit;padding:.5rem 1.2rem;margin:.8rem .6rem 0 0}.error{color:#a4000f}.tool small{display:block;color:#555;margin-left:1.6rem}
fieldset{border:1px solid #ccc;padding:.5rem 1rem}code{background:#f3f3f3;padding:0 .2rem}`;

export function sendPage(res: ServerResponse, status: number, title: string, body: string): void {
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)} · Keyward</title><style>${STYLE}</style></head><body><main><h1>${escapeHtml(title)}</h1>${body}</main></body></html>`;
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': String(Buffer.byteLength(html)),
    'cache-control': 'no-store',
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
    'x-frame-options': 'DENY',
    'referrer-policy': 'no-referrer',
    'x-content-type-options': 'nosniff',
  });
  res.end(html);
}

const hidden = (params: URLSearchParams): string =>
  [...params].map(([k, v]) => `<input type="hidden" name="${escapeHtml(k)}" value="${escapeHtml(v)}">`).join('');

export interface PageRequest {
  clientName: string;
  clientId: string;
  resource: string;
  /** The authorization request's parameters, carried back by the form. */
  params: URLSearchParams;
  action: string;
}

export function signInPage(res: ServerResponse, page: PageRequest, error?: string): void {
  sendPage(res, error ? 401 : 200, 'Sign in to Keyward', `
<p><strong>${escapeHtml(page.clientName)}</strong> asks for access to the MCP server at <code>${escapeHtml(page.resource)}</code>.</p>
<p>Sign in with your organisation's token or an admin or minter key (<code>otok_…</code>, from whoever runs Keyward, as for the console). You choose its tools next.</p>
${error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : ''}
<form method="post" action="${escapeHtml(page.action)}">${hidden(page.params)}<input type="hidden" name="step" value="signin">
<label for="token">Organisation token or admin key</label><input id="token" name="token" type="password" autocomplete="off" required>
<button type="submit">Sign in</button></form>`);
}

/** `signedInAs`: the member consenting by its single sign-on session, named so the person sees whose grant this is. */
export function consentPage(res: ServerResponse, page: PageRequest, grant: { id: string; secret: string }, tools: ReadonlyArray<{ name: string; description?: string }>, signedInAs?: string): void {
  const list = tools.length === 0
    ? '<p>This MCP server lists no tools.</p>'
    : tools.map((t, i) => `<label class="tool"><input type="checkbox" name="tools" value="${escapeHtml(t.name)}" checked id="tool-${i}"> <code>${escapeHtml(t.name)}</code>${t.description ? `<small>${escapeHtml(t.description)}</small>` : ''}</label>`).join('');
  sendPage(res, 200, 'Allow access?', `${signedInAs ? `
<p class="who">Signed in as <strong>${escapeHtml(signedInAs)}</strong>.</p>` : ''}
<p><strong>${escapeHtml(page.clientName)}</strong> <small>(${escapeHtml(page.clientId)})</small> will get a token for the MCP server at <code>${escapeHtml(page.resource)}</code>. It may call only the tools you leave ticked.</p>
<form method="post" action="${escapeHtml(page.action)}">${hidden(page.params)}<input type="hidden" name="step" value="consent">
<input type="hidden" name="consent" value="${escapeHtml(grant.id)}"><input type="hidden" name="consent_secret" value="${escapeHtml(grant.secret)}">
<fieldset><legend>Tools the token will allow</legend>${list}</fieldset>
<button type="submit" name="decision" value="allow">Allow</button><button type="submit" name="decision" value="deny">Deny</button></form>`);
}

export function errorPage(res: ServerResponse, status: number, message: string): void {
  sendPage(res, status, 'This request cannot go on', `<p class="error" role="alert">${escapeHtml(message)}</p><p>Nothing was sent to the application that asked. Start again from it, or ask whoever runs Keyward.</p>`);
}
