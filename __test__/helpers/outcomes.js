'use strict'

/**
 * What a call ended with, for comparing ours and theirs: the error a
 * promise rejected with, or the one a function threw (failing the test
 * when there is none).
 */

const assert = require('node:assert/strict')

/** The error `p` rejects with. */
async function rejection (p) {
  try {
    await p
  } catch (err) {
    return err
  }
  assert.fail('expected a rejection')
}

/** The error `fn()` throws. */
function caught (fn) {
  try {
    fn()
  } catch (err) {
    return err
  }
  assert.fail('expected a throw')
}

module.exports = { rejection, caught }
