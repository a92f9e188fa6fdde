'use strict'

/**
 * node-redisson 1.0.4's TimeUnit: conversions to milliseconds (and from
 * them) in bigints, with BigInt's own RangeError/TypeError for values that
 * are not integers (NaN, 1.5, Infinity, null), exactly as node-redisson.
 */
class TimeUnit {
  constructor (baseMs) {
    this.baseMs = baseMs
    Object.defineProperty(this, '_baseMs', { value: typeof baseMs === 'number' ? BigInt(baseMs) : baseMs, writable: false })
  }

  /** The current time in ms since the epoch, as a bigint. */
  static now () {
    return BigInt(new Date().getTime())
  }

  toMillis (d) {
    return BigInt(d) * this._baseMs
  }

  toSeconds (d) {
    return (BigInt(d) * this._baseMs) / TimeUnit.SECONDS._baseMs
  }

  toHours (d) {
    return (BigInt(d) * this._baseMs) / TimeUnit.HOURS._baseMs
  }

  toDays (d) {
    return (BigInt(d) * this._baseMs) / TimeUnit.DAYS._baseMs
  }
}

TimeUnit.MILLISECONDS = new TimeUnit(1n)
TimeUnit.SECONDS = new TimeUnit(1000n)
TimeUnit.MINUTES = new TimeUnit(60000n)
TimeUnit.HOURS = new TimeUnit(3600000n)
TimeUnit.DAYS = new TimeUnit(86400000n)

module.exports = { TimeUnit }
