'use strict'

/**
 * The operation codes and option bits the native lock operations take
 * (src/node/lockx.rs, src/node/quorum.rs), for both lock kinds.
 */

module.exports = {
  OP_ACQUIRE: 0,
  OP_RELEASE: 1,
  OP_EXTEND: 2,
  OP_INSPECT: 3,
  F_FENCING: 1,
  F_WAKE: 2,
  F_KEEP: 4
}
