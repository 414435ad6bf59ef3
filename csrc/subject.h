/* NATS subject syntax and matching, on byte ranges (no NUL terminator needed).
 *
 * A subject is a sequence of tokens separated by '.'.  A token that is exactly "*"
 * (partial wildcard) stands for any one token; a token that is exactly ">" (full
 * wildcard) stands for one or more trailing tokens and is only valid as the last
 * token.  '*' or '>' inside a longer token ("foo*", ">bar") is an ordinary character.
 * Wildcards never stand for an empty token.
 */
#ifndef JSS_SUBJECT_H
#define JSS_SUBJECT_H

#include <stddef.h>

/* 1 when no token is exactly "*" or ">" (the subject can be published to as is).
 * Does not check validity: use subject_is_valid for that. */
int subject_is_literal(const char *s, size_t n);

/* 1 when s is a well-formed subject: not empty, no empty token, no space, tab, CR, LF
 * or form feed, and a ">" token only in last position.  With allow_wildcards == 0 a
 * "*" or ">" token also makes it invalid (a publish subject). */
int subject_is_valid(const char *s, size_t n, int allow_wildcards);

/* 1 when a message can be published on s: not empty, no empty token, no space, tab,
 * CR, LF or form feed.  "*" and ">" tokens are allowed anywhere (nats-server stores and
 * routes a publish on "kv.a.*" or even "kv.>.b": its sublist matches such tokens only
 * against the wildcards of subscriptions); a subject with an empty token reaches no
 * subscription. */
int subject_is_routable(const char *s, size_t n);

/* 1 when some token of s is exactly ">" (in any position). */
int subject_has_full_wildcard(const char *s, size_t n);

/* 1 when the literal subject subj is matched by the filter flt.  Tokens of subj are
 * compared as bytes: a "*" or ">" token in subj is not a wildcard, only a wildcard of flt
 * takes it (nats-server's sublist: a publish on "a.*" reaches "a.*", "a.>", "*.*" and ">",
 * not "a.b").  An empty subject or an empty filter never matches (callers treat "match
 * everything" themselves), nor does a subject with an empty token ("a..b"). */
int subject_matches(const char *subj, size_t sn, const char *flt, size_t fn);

/* 1 when some literal subject is matched by both filters a and b (either may hold
 * wildcards).  Empty inputs never overlap. */
int subject_filters_overlap(const char *a, size_t an, const char *b, size_t bn);

/* 1 when every literal subject matched by subj is also matched by test (both may hold
 * wildcards): nats-server's subjectIsSubsetMatch, token by token.  A ">" in test takes
 * the rest of subj (one or more tokens); a "*" in test takes one token, "*" included; a
 * "*" in subj lies inside a "*" of test only, a ">" in subj inside a ">" of test only.
 * So "foo" is not inside "foo.>", "foo.>" is not inside "foo.*".  An empty token on
 * either side (a malformed subject) gives 0, as in nats-server, which tokenizes the
 * empty string as one empty token: "" is inside ">" and inside nothing else. */
int subject_is_subset_match(const char *subj, size_t sn, const char *test, size_t tn);

#endif
