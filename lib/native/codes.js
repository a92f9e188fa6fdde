'use strict'

/**
 * The operation codes and option bits the native lock operations take:
 * the token and quorum locks' (src/node/ops/lockx.rs, src/node/ops/quorum.rs, src/node/wire/codes.rs) and
 * the Redisson lock's (src/node/ops/redisson.rs).
 */

module.exports = {
  OP_ACQUIRE: 0,
  OP_RELEASE: 1,
  OP_EXTEND: 2,
  OP_INSPECT: 3,
  F_FENCING: 1,
  F_WAKE: 2,
  F_KEEP: 4,
  REDISSON_TRY_LOCK: 0,
  REDISSON_UNLOCK: 1,
  REDISSON_FORCE_UNLOCK: 2,
  REDISSON_IS_LOCKED: 3
}
