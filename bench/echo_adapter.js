// lockbench_bench's echo adapter in Node.js: the protocol alone, no Redis (see echo_adapter.py).
'use strict';
process.stdout.write(JSON.stringify({ready: true, library: 'echo'}) + '\n');
require('readline').createInterface({input: process.stdin}).on('line', (line) => {
  const req = JSON.parse(line);
  process.stdout.write(JSON.stringify(req.op === 'acquire' ? {ok: true, token: 'echo'} : {ok: true}) + '\n');
});
