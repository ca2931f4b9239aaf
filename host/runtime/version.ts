// The ptc version, kept in one place; the build checks it against package.json.
export const VERSION = '0.1.0';
