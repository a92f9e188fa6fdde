'use strict'

/**
 * Valkey GLIDE clients (`@valkey/valkey-glide`: `GlideClient`,
 * `GlideClusterClient`). A GLIDE client keeps the configuration it was
 * created with as `config`; read exactly, or refused with a TypeError that
 * names GLIDE and says what to pass instead (never guessed).
 */

const { classNames, text, int } = require('./fields')

/** Whether `value` is a GLIDE client. */
function isGlide (value) {
  const names = classNames(value)
  return names.includes('GlideClient') || names.includes('GlideClusterClient') ||
    (names.includes('BaseClient') && value.config !== null && typeof value.config === 'object' && Array.isArray(value.config.addresses))
}

function refused (why) {
  return new TypeError(`createLock cannot read this Valkey GLIDE client: ${why}; pass a redis:// or rediss:// URL, or an options object ({ host, port, db, username, password, tls }, or { cluster: [host:port, ...] }), for the same server instead`)
}

/** The `ConnectOptions` of GLIDE client `value`. */
function fromGlide (value) {
  const cfg = value.config
  if (cfg === null || typeof cfg !== 'object' || !Array.isArray(cfg.addresses) || cfg.addresses.length === 0) {
    throw refused('its configuration (config.addresses) is not there')
  }
  const nodes = cfg.addresses.map((a) => {
    if (a === null || typeof a !== 'object' || typeof a.host !== 'string' || a.host === '') throw refused('an address without a host')
    return { host: a.host, port: a.port === undefined ? 6379 : int(a.port) }
  })
  const cluster = classNames(value).includes('GlideClusterClient')
  const out = {}
  if (cluster) {
    out.cluster = nodes.map((n) => `${n.host}:${n.port}`)
    if (cfg.databaseId !== undefined && cfg.databaseId !== 0) throw refused('a cluster client on a database other than 0')
  } else {
    // A standalone client given several addresses finds the primary among them itself.
    if (nodes.length > 1) throw refused(`it lists ${nodes.length} addresses and finds the primary among them itself`)
    out.host = nodes[0].host
    out.port = nodes[0].port
    if (cfg.databaseId !== undefined) out.db = int(cfg.databaseId)
  }
  const credentials = cfg.credentials
  if (credentials !== null && typeof credentials === 'object') {
    if (credentials.iamConfig !== undefined) throw refused('it authenticates with IAM tokens, which only GLIDE can renew')
    out.username = text(credentials.username)
    out.password = text(credentials.password)
  }
  const advanced = cfg.advancedConfiguration !== null && typeof cfg.advancedConfiguration === 'object' ? cfg.advancedConfiguration : {}
  if (cfg.useTLS) {
    out.tls = true
    const t = advanced.tlsAdvancedConfiguration
    if (t !== null && typeof t === 'object') {
      if (t.insecure === true) out.tlsRejectUnauthorized = false
      if (t.rootCertificates !== undefined) out.tlsCa = Buffer.isBuffer(t.rootCertificates) ? t.rootCertificates.toString('utf8') : text(t.rootCertificates)
    }
  }
  if (cfg.requestTimeout !== undefined) out.commandTimeout = int(cfg.requestTimeout)
  if (advanced.connectionTimeout !== undefined) out.connectTimeout = int(advanced.connectionTimeout)
  return out
}

module.exports = { isGlide, fromGlide }
