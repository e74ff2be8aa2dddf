<?php
// Enqueue events into hookd from PHP (no extension beyond the CLI's own).
//
//     php hookd_client.php SOCKET ENDPOINT COUNT [PREFIX]
//
// Sends COUNT events ({"i": n}) with event ids PREFIX-n, pipelined. Every
// event carries its own event_id, so sending one again after a lost
// connection is safe: hookd answers "duplicate": true and stores nothing.
// Exit 0 when all are acknowledged, 1 on an error a retry cannot fix, 2
// when hookd made no progress for RETRY_FOR seconds.

const WINDOW = 100;          // requests written before reading their replies
const RETRY_FOR = 30.0;      // seconds without progress before giving up
const RETRYABLE = ['storage_full', 'storage_error', 'storage_unavailable', 'shutting_down', 'busy'];

class Fatal extends Exception {}

// Send $reqs pipelined; returns [replies read in order, why the rest are missing or null].
function send_window($conn, array $reqs): array
{
    $out = '';
    foreach ($reqs as $r) {
        $out .= json_encode($r, JSON_UNESCAPED_SLASHES) . "\n";
    }
    for ($off = 0; $off < strlen($out); $off += $n) {
        $n = @fwrite($conn, substr($out, $off));
        if ($n === false || $n === 0) {
            return [[], 'connection: write failed'];
        }
    }
    $replies = [];
    foreach ($reqs as $_) {
        $line = fgets($conn);
        if ($line === false) {
            return [$replies, 'hookd closed the connection'];
        }
        $replies[] = json_decode($line, true);
    }
    return [$replies, null];
}

// $events: [[event_id, payload], ...]. Returns the number of duplicates.
function enqueue_all(string $path, string $endpoint, array $events): int
{
    $todo = $events;
    $dups = 0;
    $delay = 0.1;
    $last_progress = microtime(true);
    $conn = null;
    while ($todo) {
        $replies = [];
        $why = null;
        if (!$conn) {
            $conn = @stream_socket_client("unix://$path", $errno, $errstr, 30);
            if (!$conn) {
                $why = "connect: $errstr";
            } else {
                stream_set_timeout($conn, 30);
            }
        }
        if ($conn) {
            $reqs = [];
            foreach (array_slice($todo, 0, WINDOW) as [$id, $payload]) {
                $reqs[] = ['op' => 'enqueue', 'endpoint' => $endpoint, 'event_id' => $id, 'payload' => $payload];
            }
            [$replies, $why] = send_window($conn, $reqs);
        }
        $broken = $why !== null;             // a transport problem, not a refusal
        $done = 0;
        $again = [];
        foreach ($replies as $k => $r) {
            if (!empty($r['ok'])) {
                $dups += !empty($r['duplicate']);
                $done++;
                continue;
            }
            $code = $r['error']['code'];
            if (!in_array($code, RETRYABLE, true)) {
                throw new Fatal("$code: " . $r['error']['message']);
            }
            $again[] = $todo[$k];            // refused, not stored: send again
            $why = $why ?? $code;
        }
        // the refused, then whatever got no reply
        $todo = array_merge($again, array_slice($todo, count($replies)));
        if ($conn && $broken) {              // start afresh
            fclose($conn);
            $conn = null;
        }
        if ($done) {
            $delay = 0.1;
            $last_progress = microtime(true);
        }
        if ($why !== null && $todo) {
            if (microtime(true) - $last_progress > RETRY_FOR) {
                throw new RuntimeException(sprintf('no progress for %.0f s (%s)', RETRY_FOR, $why));
            }
            fprintf(STDERR, "retrying in %.1f s: %s\n", $delay, $why);
            usleep((int)($delay * 1e6));
            $delay = min($delay * 2, 2.0);
        }
    }
    if ($conn) {
        fclose($conn);
    }
    return $dups;
}

[$_, $path, $endpoint, $count] = $argv;
$prefix = $argv[4] ?? 'php';
$events = [];
for ($i = 0; $i < (int)$count; $i++) {
    $events[] = ["$prefix-$i", ['i' => $i]];
}
try {
    $dups = enqueue_all($path, $endpoint, $events);
} catch (Fatal $e) {
    fwrite(STDERR, 'error ' . $e->getMessage() . "\n");
    exit(1);
} catch (RuntimeException $e) {
    fwrite(STDERR, 'error ' . $e->getMessage() . "\n");
    exit(2);
}
printf("acked=%d duplicates=%d\n", (int)$count, $dups);
