/** The application version the spec declares (§9): in OpenAPI `info.version` and `/health`. */
export const APP_VERSION = '1.0';
