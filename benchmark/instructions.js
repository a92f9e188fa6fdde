// Sequential acquire + release cycles of one createLock, for counting
// instructions under callgrind (benchmark/NOTES.md §17):
//   valgrind --tool=callgrind node benchmark/instructions.js <checkout> <cycles> <redis port>

const R = require(process.argv[2])
const n = Number(process.argv[3])
const port = Number(process.argv[4])
;(async () => {
  const lock = R.createLock({ host: '127.0.0.1', port }, { timeout: 5000 })
  for (let i = 0; i < n; i++) { await lock.acquire('cyc:k'); await lock.release() }
  process.exit(0)
})()
