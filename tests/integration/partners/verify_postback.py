"""A partner's postback verification, written the way affiliate networks
document it (the signature is a digest of named query parameters
concatenated in order, plus or keyed by the shared token; lowercase hex),
and GitHub's X-Hub-Signature-256 check. Used by test_partner_sig.py; as
a script: verify_postback.py SCHEME TOKEN QUERY_STRING FIELD,FIELD...
exits 0 when the query's "sig" parameter verifies."""
import hashlib
import hmac
import sys
from urllib.parse import parse_qs


def expected(scheme, token, params, fields):
    # "concatenate the values of the listed parameters, without separator"
    data = "".join(token if f == "@token" else params[f] for f in fields).encode()
    if scheme in ("md5", "sha1", "sha256"):
        return hashlib.new(scheme, data).hexdigest()
    if scheme == "hmac_sha1":
        return hmac.new(token.encode(), data, hashlib.sha1).hexdigest()
    if scheme == "hmac_sha256":
        return hmac.new(token.encode(), data, hashlib.sha256).hexdigest()
    raise ValueError(scheme)


def verify_query(scheme, token, query, fields, param="sig"):
    params = {k: v[0] for k, v in parse_qs(query, keep_blank_values=True).items()}
    return hmac.compare_digest(expected(scheme, token, params, fields), params.get(param, ""))


def verify_hub(secret, body, header_value):
    """GitHub's documented check: 'sha256=' + HMAC-SHA256 hex of the raw
    body, compared in constant time. While the sender rotates its secrets
    the header holds one value per secret, comma separated."""
    want = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
    return any(hmac.compare_digest(want, v.strip()) for v in header_value.split(","))


if __name__ == "__main__":
    scheme, token, query, fields = sys.argv[1:5]
    sys.exit(0 if verify_query(scheme, token, query, fields.split(",")) else 1)
