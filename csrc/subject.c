/* NATS subject syntax and matching.  See subject.h for the rules. */
#include "subject.h"

#include <string.h>

/* End (exclusive) of the token starting at start: the next '.' or n. */
static size_t token_end(const char *s, size_t n, size_t start)
{
    const char *dot = start < n ? memchr(s + start, '.', n - start) : NULL;
    return dot ? (size_t)(dot - s) : n;
}

static int is_full_wildcard(const char *s, size_t start, size_t end)
{
    return end - start == 1 && s[start] == '>';
}

static int is_partial_wildcard(const char *s, size_t start, size_t end)
{
    return end - start == 1 && s[start] == '*';
}

static int is_subject_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

/* 1 when s (not empty) has an empty token: a leading or trailing '.', or two in a row. */
static int has_empty_token(const char *s, size_t n)
{
    if (s[0] == '.' || s[n - 1] == '.')
        return 1;
    for (const char *dot = memchr(s, '.', n); dot != NULL;
         dot = memchr(dot + 1, '.', (size_t)(s + n - dot - 1))) {
        if (dot[1] == '.')
            return 1;
    }
    return 0;
}

int subject_is_literal(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if ((c == '*' || c == '>') && (i == 0 || s[i - 1] == '.') && (i + 1 == n || s[i + 1] == '.'))
            return 0;
    }
    return 1;
}

int subject_has_full_wildcard(const char *s, size_t n)
{
    for (const char *gt = memchr(s, '>', n); gt != NULL;
         gt = memchr(gt + 1, '>', (size_t)(s + n - gt - 1))) {
        if ((gt == s || gt[-1] == '.') && (gt + 1 == s + n || gt[1] == '.'))
            return 1;
    }
    return 0;
}

int subject_is_valid(const char *s, size_t n, int allow_wildcards)
{
    if (n == 0)
        return 0;
    size_t start = 0;
    for (;;) {
        size_t end = start;
        while (end < n && s[end] != '.') {
            if (is_subject_space(s[end]))
                return 0;
            end++;
        }
        if (end == start)
            return 0;                       /* empty token */
        int full = is_full_wildcard(s, start, end);
        if (!allow_wildcards && (full || is_partial_wildcard(s, start, end)))
            return 0;
        if (end == n)
            return 1;
        if (full)
            return 0;                       /* ">" followed by more tokens */
        start = end + 1;
    }
}

int subject_is_routable(const char *s, size_t n)
{
    if (n == 0 || s[0] == '.' || s[n - 1] == '.')
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (is_subject_space(c) || (c == '.' && s[i + 1] == '.'))
            return 0;                       /* (s[i + 1] exists: s does not end in '.') */
    }
    return 1;
}

int subject_matches(const char *subj, size_t sn, const char *flt, size_t fn)
{
    if (sn == 0 || fn == 0)
        return 0;
    size_t si = 0, fi = 0;
    for (;;) {
        size_t se = token_end(subj, sn, si);
        size_t fe = token_end(flt, fn, fi);
        if (is_full_wildcard(flt, fi, fe))
            return se > si && !has_empty_token(subj + si, sn - si);   /* one or more tokens */
        if (is_partial_wildcard(flt, fi, fe)) {
            if (se == si)
                return 0;
        } else if (fe - fi != se - si || memcmp(flt + fi, subj + si, se - si) != 0) {
            return 0;
        }
        int subject_done = se == sn, filter_done = fe == fn;
        if (subject_done || filter_done)
            return subject_done && filter_done;
        si = se + 1;
        fi = fe + 1;
    }
}

int subject_filters_overlap(const char *a, size_t an, const char *b, size_t bn)
{
    if (an == 0 || bn == 0)
        return 0;
    size_t ai = 0, bi = 0;
    for (;;) {
        size_t ae = token_end(a, an, ai);
        size_t be = token_end(b, bn, bi);
        int a_empty = ae == ai, b_empty = be == bi;
        if (is_full_wildcard(a, ai, ae))
            return !b_empty;                /* ">" absorbs the rest of b */
        if (is_full_wildcard(b, bi, be))
            return !a_empty;
        if (is_partial_wildcard(a, ai, ae)) {
            if (b_empty)
                return 0;
        } else if (is_partial_wildcard(b, bi, be)) {
            if (a_empty)
                return 0;
        } else if (ae - ai != be - bi || memcmp(a + ai, b + bi, ae - ai) != 0) {
            return 0;                       /* two different literal tokens */
        }
        int a_done = ae == an, b_done = be == bn;
        if (a_done || b_done)
            return a_done && b_done;
        ai = ae + 1;
        bi = be + 1;
    }
}

int subject_is_subset_match(const char *subj, size_t sn, const char *test, size_t tn)
{
    size_t si = 0, ti = 0;
    int subject_left = 1;                   /* a token of subj starts at si */
    for (;;) {
        size_t te = token_end(test, tn, ti);
        if (!subject_left || te == ti)
            return 0;                       /* test is longer, or an empty test token */
        if (is_full_wildcard(test, ti, te))
            return 1;                       /* ">" takes what is left of subj */
        size_t se = token_end(subj, sn, si);
        if (se == si || is_full_wildcard(subj, si, se))
            return 0;
        int test_partial = is_partial_wildcard(test, ti, te);
        if (is_partial_wildcard(subj, si, se)) {
            if (!test_partial)
                return 0;                   /* "*" lies inside "*" (or ">") only */
        } else if (!test_partial
                   && (te - ti != se - si || memcmp(test + ti, subj + si, se - si) != 0)) {
            return 0;
        }
        subject_left = se < sn;
        if (te == tn)
            return !subject_left;           /* same number of tokens */
        ti = te + 1;
        if (subject_left)
            si = se + 1;
    }
}
