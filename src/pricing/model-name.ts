/** The grammar of a model name or `prefix*` pattern, shared by token scopes, price tables and the admin API's schema. */
export const MODEL = /^[A-Za-z0-9._:\/@+-]{1,200}\*?$|^\*$/;
