<?php
// A partner's postback verification in PHP, as affiliate networks
// document it: the "sig" parameter is md5/sha1/sha256 of the listed
// parameters' values concatenated in order (the shared token where the
// list says @token), or hash_hmac of them keyed by the token; lowercase
// hex. Usage: php verify_postback.php SCHEME TOKEN QUERY_STRING FIELDS
// Exits 0 when the signature verifies.
[$self, $scheme, $token, $query, $fields] = $argv;
parse_str($query, $q);
$data = '';
foreach (explode(',', $fields) as $f) {
    $data .= ($f === '@token') ? $token : ($q[$f] ?? '');
}
switch ($scheme) {
case 'md5':         $want = md5($data); break;
case 'sha1':        $want = sha1($data); break;
case 'sha256':      $want = hash('sha256', $data); break;
case 'hmac_sha1':   $want = hash_hmac('sha1', $data, $token); break;
case 'hmac_sha256': $want = hash_hmac('sha256', $data, $token); break;
default:            fwrite(STDERR, "unknown scheme\n"); exit(2);
}
exit(hash_equals($want, $q['sig'] ?? '') ? 0 : 1);
