'use strict'

const { text, int, tlsFields, address } = require('./fields')

/** node_redis v4+: `client.options` with `url`, `socket`, `database`. */
function fromNodeRedis4 (client) {
  const opts = client.options || {}
  const socket = opts.socket || {}
  const out = {
    url: text(opts.url),
    ...address(socket.path, socket.host, socket.port),
    db: int(opts.database),
    username: text(opts.username),
    password: text(opts.password)
  }
  if (socket.tls) {
    tlsFields(socket.tls === true ? { ...socket } : socket.tls, out)
  }
  return out
}

module.exports = { fromNodeRedis4 }
