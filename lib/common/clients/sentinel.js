'use strict'

const { URL_SCHEME, invalidClient, text, int, tlsFields, keyPrefix, seed } = require('./fields')

/**
 * Sentinel: `{ sentinels: [host:port | {host, port}, ...], name, sentinelPassword,
 * sentinelUsername, db, username, password, tls, keyPrefix }`, or an ioredis
 * client built with those options. `null` when `value` is neither.
 */
function fromSentinel (value) {
  if (isNodeRedisSentinel(value)) return fromNodeRedisSentinel(value)
  const isIORedis = typeof value.sendCommand === 'function' && typeof value.defineCommand === 'function'
  const o = isIORedis ? value.options : value
  if (o === null || typeof o !== 'object' || o.sentinels === undefined || o.sentinels === null) return null
  if (!Array.isArray(o.sentinels) || o.sentinels.length === 0) {
    throw invalidClient(value, 'Sentinel settings whose sentinels are not a non-empty array')
  }
  const name = text(o.name)
  if (name === undefined) throw invalidClient(value, 'Sentinel settings without the primary\'s name')
  const out = {
    sentinels: o.sentinels.map((n) => {
      const s = seed(n)
      return URL_SCHEME.test(s) ? s.replace(URL_SCHEME, '').replace(/^[^@]*@/, '').replace(/\/.*$/, '') : s
    }),
    sentinelName: name,
    sentinelUsername: text(o.sentinelUsername),
    sentinelPassword: text(o.sentinelPassword),
    db: int(o.db),
    username: text(o.username),
    password: text(o.password),
    connectTimeout: int(o.connectTimeout),
    commandTimeout: int(o.commandTimeout)
  }
  const withTls = tlsFields(o.tls, out)
  if (withTls.tlsCa !== undefined || withTls.tlsCert !== undefined || withTls.tlsKey !== undefined) {
    // The redis crate's Sentinel lookup takes a TLS mode but no certificates.
    throw invalidClient(value, 'Sentinel settings with a custom TLS CA or client certificate (not supported behind Sentinel: use tls: true with certificates the system trusts)')
  }
  return { out: withTls, prefix: keyPrefix(isIORedis ? o.keyPrefix : (o.keyPrefix !== undefined ? o.keyPrefix : o.prefix), value) }
}

/** A node-redis `createSentinel()` client (v5+): its nodes are public, its options are not. */
function isNodeRedisSentinel (value) {
  return typeof value.getSentinelNode === 'function' && typeof value.getMasterNode === 'function'
}

/**
 * A connected node-redis Sentinel client: the sentinel it talks to and the
 * primary it uses are public; the primary's name is then asked of the
 * sentinels natively (with every sentinel they know of). Its credentials,
 * TLS and database are private: a protected setup needs
 * `{ sentinels, name, password }`.
 */
function fromNodeRedisSentinel (value) {
  const sentinel = value.getSentinelNode()
  const primary = value.getMasterNode()
  const at = (n) => (n && typeof n.host === 'string' && Number.isInteger(n.port) ? `${n.host}:${n.port}` : null)
  if (at(sentinel) === null || at(primary) === null) {
    throw invalidClient(value, 'a node-redis Sentinel client that has not connected yet (call connect() first: its nodes are known only then)')
  }
  return { out: { sentinels: [at(sentinel)], sentinelPrimary: at(primary) }, prefix: '' }
}

module.exports = { fromSentinel, isNodeRedisSentinel }
