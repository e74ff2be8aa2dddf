#!/usr/bin/env node
// Enqueue events into hookd from Node.js (core modules only).
//
//     node hookd_client.js SOCKET ENDPOINT COUNT [PREFIX]
//
// Sends COUNT events ({"i": n}) with event ids PREFIX-n, pipelined. Every
// event carries its own event_id, so sending one again after a lost
// connection is safe: hookd answers "duplicate": true and stores nothing.
// Exit 0 when all are acknowledged, 1 on an error a retry cannot fix, 2
// when hookd made no progress for RETRY_FOR seconds.
'use strict';
const net = require('net');

const WINDOW = 100;           // requests written before reading their replies
const RETRY_FOR = 30000;      // ms without progress before giving up
const RETRYABLE = new Set(['storage_full', 'storage_error', 'storage_unavailable', 'shutting_down', 'busy']);

class Fatal extends Error {}

// One connection; replies are read line by line, in request order.
function connect(path) {
  return new Promise((resolve, reject) => {
    const sock = net.createConnection({ path });
    const conn = { sock, buf: '', lines: [], waiter: null, closed: null };
    const wake = () => { if (conn.waiter) { const w = conn.waiter; conn.waiter = null; w(); } };
    sock.setEncoding('utf8');
    sock.setTimeout(30000, () => sock.destroy(new Error('timeout')));
    sock.on('data', (d) => {
      conn.buf += d;
      let nl;
      while ((nl = conn.buf.indexOf('\n')) >= 0) {
        conn.lines.push(conn.buf.slice(0, nl));
        conn.buf = conn.buf.slice(nl + 1);
      }
      wake();
    });
    sock.on('error', (e) => { conn.closed = 'connection: ' + e.message; wake(); });
    sock.on('close', () => { conn.closed = conn.closed || 'hookd closed the connection'; wake(); });
    sock.once('connect', () => resolve(conn));
    sock.once('error', reject);
  });
}

async function readLine(conn) {
  while (!conn.lines.length) {
    if (conn.closed) return null;
    await new Promise((r) => { conn.waiter = r; });
  }
  return conn.lines.shift();
}

// Send reqs pipelined; returns [replies read in order, why the rest are missing or null].
async function sendWindow(conn, reqs) {
  conn.sock.write(reqs.map((r) => JSON.stringify(r) + '\n').join(''));
  const replies = [];
  for (let i = 0; i < reqs.length; i++) {
    const line = await readLine(conn);
    if (line === null) return [replies, conn.closed];
    replies.push(JSON.parse(line));
  }
  return [replies, null];
}

// events: [[eventId, payload], ...]. Resolves to the number of duplicates.
async function enqueueAll(path, endpoint, events) {
  let todo = events.slice(), dups = 0, delay = 100, lastProgress = Date.now(), conn = null;
  try {
    while (todo.length) {
      let replies = [], why = null;
      if (!conn) {
        try { conn = await connect(path); } catch (e) { why = 'connect: ' + e.message; }
      }
      if (conn) {
        const reqs = todo.slice(0, WINDOW).map(([id, payload]) =>
          ({ op: 'enqueue', endpoint, event_id: id, payload }));
        [replies, why] = await sendWindow(conn, reqs);
      }
      const broken = why !== null;              // a transport problem, not a refusal
      let done = 0;
      const again = [];
      replies.forEach((r, k) => {
        if (r.ok) {
          dups += r.duplicate ? 1 : 0;
          done++;
          return;
        }
        if (!RETRYABLE.has(r.error.code)) throw new Fatal(r.error.code + ': ' + r.error.message);
        again.push(todo[k]);                        // refused, not stored: send again
        why = why || r.error.code;
      });
      todo = again.concat(todo.slice(replies.length));   // and whatever got no reply
      if (conn && broken) { conn.sock.destroy(); conn = null; }   // start afresh
      if (done) { delay = 100; lastProgress = Date.now(); }
      if (why && todo.length) {
        if (Date.now() - lastProgress > RETRY_FOR) throw new Error(`no progress for ${RETRY_FOR / 1000} s (${why})`);
        process.stderr.write(`retrying in ${(delay / 1000).toFixed(1)} s: ${why}\n`);
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 2000);
      }
    }
  } catch (e) {
    // an open socket keeps Node running: close it, or a fatal error
    // would leave the process waiting for the socket's own timeout
    if (conn) conn.sock.destroy();
    throw e;
  }
  if (conn) conn.sock.end();
  return dups;
}

async function main() {
  const [path, endpoint, count, prefix = 'node'] = process.argv.slice(2);
  const events = [];
  for (let i = 0; i < Number(count); i++) events.push([`${prefix}-${i}`, { i }]);
  try {
    const dups = await enqueueAll(path, endpoint, events);
    console.log(`acked=${count} duplicates=${dups}`);
  } catch (e) {
    process.stderr.write('error ' + e.message + '\n');
    process.exitCode = e instanceof Fatal ? 1 : 2;
  }
}

main();
