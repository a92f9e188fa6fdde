// ava's config for __test__/pool only (run by __test__/worker-pool.test.js
// with --config): each file in its own worker thread, two at a time
// unless --concurrency says otherwise.
export default {
  files: ['__test__/pool/*.js'],
  workerThreads: true,
  concurrency: 2,
  timeout: '20s',
  cache: false // writes nothing to node_modules/.cache
}
