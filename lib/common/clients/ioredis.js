'use strict'

/** ioredis and iovalkey (the same client, the same options). */

const { text, int, tlsFields, address } = require('./fields')

/** ioredis: `client.options`; the database currently selected wins. */
function fromIORedis (client) {
  const opts = client.options || {}
  const selected = client.condition && client.condition.select
  const out = {
    ...address(opts.path, opts.host, opts.port),
    db: int(selected !== undefined && selected !== null ? selected : opts.db),
    username: text(opts.username),
    password: text(opts.password)
  }
  return tlsFields(opts.tls, out)
}

module.exports = { fromIORedis }
