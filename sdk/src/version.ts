/**
 * The plugin API's version. Every provider and middleware file declares `apiVersion: 1`; the core refuses
 * a file without it or with a version it does not know, naming the file. A v1 plugin keeps working through
 * every 1.x of the core (this package's major version follows the API version).
 */
export type ApiVersion = 1;
