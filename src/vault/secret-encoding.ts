/**
 * The plaintext sealed in a credential's envelope, without a store schema
 * change. A credential whose only secret is `api_key` (every record written
 * before credentials had several fields, and every key-based one since) holds
 * the bare key: printable ASCII, so it never begins with a 0x00 byte, and an
 * older build still opens it. Any other set of secrets is 0x00, a format
 * version (0x01), then the JSON object of the secret fields. An unknown version
 * or a malformed object fails closed (the record is never served).
 */
const MARK = '\u0000';
const V1 = '\u0001';

export class SecretsFormatError extends Error {
  constructor() {
    super('the sealed secrets are in no known format');
    this.name = 'SecretsFormatError';
  }
}

export function encodeSecrets(secrets: Readonly<Record<string, string>>): string {
  const names = Object.keys(secrets);
  if (names.length === 1 && names[0] === 'api_key' && !secrets.api_key!.startsWith(MARK)) return secrets.api_key!;
  return MARK + V1 + JSON.stringify(secrets);
}

export function decodeSecrets(plaintext: string): Record<string, string> {
  if (!plaintext.startsWith(MARK)) return { api_key: plaintext };
  if (plaintext[1] !== V1) throw new SecretsFormatError();
  let parsed: unknown;
  try {
    parsed = JSON.parse(plaintext.slice(2));
  } catch {
    throw new SecretsFormatError();
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new SecretsFormatError();
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(parsed)) {
    if (typeof value !== 'string') throw new SecretsFormatError();
    out[name] = value;
  }
  return out;
}
