"""Go's standard-library rules that nats-server's answers depend on, written once.

nats-server is a Go program: what it accepts and writes follows ``encoding/json``, ``time``
(RFC 3339, durations) and ``strconv`` (quoting). Every layer above that must answer as it
does takes those rules from here. Nothing in this package knows about NATS.

    json        encoding/json: the request decoder (unmarshal, decode_request) and the
                HTML-safe encoder (encode); jsonsyntax is its reader of JSON text
    quoting     strconv.Quote / QuoteRune, encoding/json's and time's quoting
    durations   time.ParseDuration and Duration.String
    text        bytes.TrimSpace, strconv.Atoi, bytes as Go prints them
    varints     encoding/binary's varints
"""
