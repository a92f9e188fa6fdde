'use strict'

const { text, int, tlsFields, address } = require('./fields')

/** node_redis v3: `client.connection_options`, `client.options`, `selected_db`. */
function fromNodeRedis3 (client) {
  const opts = client.options || {}
  const conn = client.connection_options || {}
  const out = {
    ...address(conn.path || opts.path, conn.host || opts.host, conn.port || opts.port),
    db: int(client.selected_db !== undefined && client.selected_db !== null ? client.selected_db : opts.db),
    username: text(client.auth_user || opts.user || opts.username),
    password: text(client.auth_pass || opts.password || opts.auth_pass)
  }
  return tlsFields(opts.tls, out)
}

module.exports = { fromNodeRedis3 }
