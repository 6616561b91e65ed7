/* Maximal-munch runs of the lexer DFA over token strings: the two byte-by-byte loops of the
 * pipeline, compiled (greatgramma/native.py wraps them; subtrees.py and transducer.py hold the
 * same loops in numpy, used where this module is not built, and the tests check both agree).
 *
 * walk:           the strings of trie subtrees from the DFA state after their first byte until
 *                 their first lexeme ends (SubtreeWalks; with the columns an indenter needs), sharing each string's
 *                 common prefix with the one before it.
 * suffix_lexemes: from the start state at flat byte positions, the first lexeme, and from where
 *                 it breaks, on (the suffix rows, before they are interned).
 * intern_rows:    those rows interned as outcome rows, shallowest first.
 *
 * Arrays come as contiguous buffers of fixed item sizes (native.py converts them); the loops
 * release the GIL. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define DEAD (-1)
#define END (-2)

/* Outcome codes of walk (native.py names them). */
#define W_ONE 0      /* a one-byte string: not walked (the caller does it) */
#define W_DROP 1     /* dies with no lexeme to back up to */
#define W_BREAK 2    /* first lexeme ends as term; the rest starts at byte off */
#define W_FALLBACK 3 /* dies holding the fallback it entered with */
#define W_END 4      /* ends inside the lexeme in state; la_off/la_term where it last could end */

typedef struct {
    Py_buffer b;
    int held;
} Buf;

static int take(PyObject *obj, Buf *out, Py_ssize_t itemsize, int writable, const char *name) {
    out->held = 0;
    if (PyObject_GetBuffer(obj, &out->b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    out->held = 1;
    if (out->b.itemsize != itemsize) {
        PyErr_Format(PyExc_TypeError, "%s: items of %zd bytes expected, got %zd", name, itemsize, out->b.itemsize);
        return -1;
    }
    return 0;
}

static void release(Buf *bufs, int n) {
    for (int i = 0; i < n; i++)
        if (bufs[i].held) PyBuffer_Release(&bufs[i].b);
}

#define LEN(buf) ((buf).b.len / (buf).b.itemsize)

/* walk(delta i32[Q*256], accept_next i32[Q*256], risky u8[Q], flat u8[], offsets i64[S+1],
 *      lcp i32[S], lo i64[P], hi i64[P], state i64[P], la_off i64[P], tab,
 *      code i8[T], term i64[T], at i64[T], la_off_out i64[T], la_term_out i64[T], where i64[T], la_where i64[T])
 * with T = sum(hi - lo): per string of each pair's range [lo, hi) in turn, its outcome; where /
 * la_where: the column where the first lexeme (or the string) / the last possible end is
 * (NEWLINE_SEEN + blanks since a newline in the string, or blanks since byte 1; a tab counts tab). */
#define NEWLINE_SEEN ((int64_t)1 << 40)
#define WALK_ARGS 17
static PyObject *walk(PyObject *self, PyObject *args) {
    PyObject *o[WALK_ARGS];
    long long tab;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOLOOOOOOO:walk", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7],
                          &o[8], &o[9], &tab, &o[10], &o[11], &o[12], &o[13], &o[14], &o[15], &o[16]))
        return NULL;
    static const Py_ssize_t sizes[WALK_ARGS] = {4, 4, 1, 1, 8, 4, 8, 8, 8, 8, 1, 8, 8, 8, 8, 8, 8};
    static const char *names[WALK_ARGS] = {"delta", "accept_next", "risky", "flat", "offsets", "lcp",
                                           "lo", "hi", "state", "la_off", "code", "term", "at",
                                           "la_off_out", "la_term_out", "where", "la_where"};
    Buf b[WALK_ARGS];
    memset(b, 0, sizeof b);
    for (int i = 0; i < WALK_ARGS; i++)
        if (take(o[i], &b[i], sizes[i], i >= 10, names[i]) < 0) {
            release(b, WALK_ARGS);
            return NULL;
        }
    const int32_t *delta = b[0].b.buf, *accept_next = b[1].b.buf, *lcp = b[5].b.buf;
    const uint8_t *risky = b[2].b.buf, *flat = b[3].b.buf;
    const int64_t *offsets = b[4].b.buf, *lo = b[6].b.buf, *hi = b[7].b.buf, *state0 = b[8].b.buf,
                  *la_off0 = b[9].b.buf;
    int8_t *code = b[10].b.buf;
    int64_t *term = b[11].b.buf, *at = b[12].b.buf, *la_off_out = b[13].b.buf, *la_term_out = b[14].b.buf,
            *where = b[15].b.buf, *la_where = b[16].b.buf;
    Py_ssize_t pairs = LEN(b[6]), total = 0, strings = LEN(b[4]) - 1, width = 0;
    if (LEN(b[7]) != pairs || LEN(b[8]) != pairs || LEN(b[9]) != pairs || LEN(b[5]) < strings) {
        release(b, WALK_ARGS);
        return PyErr_Format(PyExc_ValueError, "walk: array lengths disagree");
    }
    for (Py_ssize_t p = 0; p < pairs; p++) {
        if (lo[p] < 0 || hi[p] > strings || lo[p] > hi[p]) {
            release(b, WALK_ARGS);
            return PyErr_Format(PyExc_ValueError, "walk: pair %zd: string range [%lld, %lld) outside 0..%zd", p,
                                (long long)lo[p], (long long)hi[p], strings);
        }
        total += hi[p] - lo[p];
        for (int64_t s = lo[p]; s < hi[p]; s++)
            if (offsets[s + 1] - offsets[s] > width) width = offsets[s + 1] - offsets[s];
    }
    for (int i = 10; i < WALK_ARGS; i++)
        if (LEN(b[i]) < total) {
            release(b, WALK_ARGS);
            return PyErr_Format(PyExc_ValueError, "walk: %s holds fewer than %zd entries", names[i], total);
        }
    /* per depth d, before byte d: the DFA state, where the lexeme last could end (-1: the entry
     * fallback is still held, -2: nowhere) and as which terminal, the column there and at that end */
    int64_t *st = PyMem_Malloc(sizeof(int64_t) * 5 * (width + 2));
    if (!st) {
        release(b, WALK_ARGS);
        return PyErr_NoMemory();
    }
    int64_t *off = st + (width + 2), *lt = off + (width + 2), *col = lt + (width + 2), *lcol = col + (width + 2);
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t out = 0;
    for (Py_ssize_t p = 0; p < pairs; p++) {
        int64_t valid = 0; /* stack entries 1..valid hold the previous string's walk */
        int64_t died = -1; /* the byte the previous string died at (-1: it did not) */
        int8_t last_code = W_DROP;
        int64_t last_term = DEAD, last_at = 0, last_where = 0;
        st[1] = state0[p], off[1] = la_off0[p], lt[1] = DEAD, col[1] = 0, lcol[1] = 0;
        for (int64_t s = lo[p]; s < hi[p]; s++, out++) {
            int64_t len = offsets[s + 1] - offsets[s];
            const uint8_t *bytes = flat + offsets[s];
            la_off_out[out] = -2, la_term_out[out] = DEAD, term[out] = DEAD, at[out] = 0;
            where[out] = 0, la_where[out] = 0;
            if (len == 1) {
                code[out] = W_ONE;
                valid = 1, died = -1;
                continue;
            }
            int64_t shared = s == lo[p] ? 1 : lcp[s];
            if (died >= 1 && died < shared) { /* dies at the same byte as the one before */
                code[out] = last_code, term[out] = last_term, at[out] = last_at, where[out] = last_where;
                continue;
            }
            int64_t d = shared < valid ? shared : valid;
            if (d < 1) d = 1;
            died = -1;
            for (; d < len; d++) {
                int64_t q = st[d], c = bytes[d];
                int32_t nxt = delta[q * 256 + c], here = accept_next[q * 256 + c];
                if (nxt == DEAD) {
                    last_term = DEAD, last_at = 0, last_where = 0;
                    if (here != DEAD) last_code = W_BREAK, last_term = here, last_at = d, last_where = col[d];
                    else if (off[d] >= 0) last_code = W_BREAK, last_term = lt[d], last_at = off[d], last_where = lcol[d];
                    else if (off[d] == -1) last_code = W_FALLBACK;
                    else last_code = W_DROP;
                    died = d;
                    break;
                }
                int64_t o2 = here != DEAD ? d : off[d];
                st[d + 1] = nxt, off[d + 1] = risky[nxt] ? o2 : -2, lt[d + 1] = here != DEAD ? here : lt[d];
                lcol[d + 1] = here != DEAD ? col[d] : lcol[d];
                col[d + 1] = c == 10 ? NEWLINE_SEEN : col[d] + (c == 32) + (c == 9 ? tab : 0);
            }
            if (died >= 0) {
                valid = died;
                code[out] = last_code, term[out] = last_term, at[out] = last_at, where[out] = last_where;
            } else {
                valid = len;
                code[out] = W_END, at[out] = st[len], la_off_out[out] = off[len], la_term_out[out] = lt[len];
                where[out] = col[len], la_where[out] = lcol[len];
            }
        }
    }
    Py_END_ALLOW_THREADS
    PyMem_Free(st);
    release(b, WALK_ARGS);
    Py_RETURN_NONE;
}

/* The first lexeme from the start state at flat position pos of a string ending at end: the
 * terminal it breaks as (*next: the flat position the rest starts at), or END (-2; *next: the
 * state the string ends in; *la_at, *la_term: where the lexeme last could end, -1: nowhere),
 * or DEAD. */
static int64_t first_lexeme(const int32_t *delta, const int32_t *accept_next, const uint8_t *risky,
                            const uint8_t *flat, int64_t pos, int64_t end, int64_t *next, int64_t *la_at,
                            int64_t *la_term) {
    int64_t last = -1, last_term = DEAD, q = delta[flat[pos]];
    *next = DEAD, *la_at = -1, *la_term = DEAD;
    if (q == DEAD) return DEAD;
    for (pos++;; pos++) {
        if (pos == end) {
            *next = q, *la_at = last, *la_term = last_term;
            return -2;
        }
        int64_t c = flat[pos];
        int32_t nxt = delta[q * 256 + c], here = accept_next[q * 256 + c];
        if (nxt == DEAD) {
            if (here == DEAD && last >= 0) {
                *next = last;
                return last_term;
            }
            *next = pos;
            return here;
        }
        if (here != DEAD) last = pos, last_term = here;
        if (!risky[nxt]) last = -1;
        q = nxt;
    }
}

#define UNKNOWN (-7)

/* suffix_lexemes(delta i32[Q*256], accept_next i32[Q*256], risky u8[Q], flat u8[N], stop i64[N],
 *                memo i32[N], todo i64[T])
 * The first lexemes of the suffix rows not yet known (memo UNKNOWN) at positions todo and at
 * every position a break there continues at, recursively: (positions, term, next, la_at, la_term,
 * depth) as bytes of i64 arrays, per position as first_lexeme gives it; depth 0 where the rest is
 * known (END, DEAD, or a break continuing at a known row), else 1 + the continuation's depth. */
static PyObject *suffix_lexemes(PyObject *self, PyObject *args) {
    PyObject *o[7];
    if (!PyArg_UnpackTuple(args, "suffix_lexemes", 7, 7, &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6]))
        return NULL;
    static const Py_ssize_t sizes[7] = {4, 4, 1, 1, 8, 4, 8};
    static const char *names[7] = {"delta", "accept_next", "risky", "flat", "stop", "memo", "todo"};
    Buf b[7];
    memset(b, 0, sizeof b);
    for (int i = 0; i < 7; i++)
        if (take(o[i], &b[i], sizes[i], 0, names[i]) < 0) {
            release(b, 7);
            return NULL;
        }
    const int32_t *delta = b[0].b.buf, *accept_next = b[1].b.buf, *memo = b[5].b.buf;
    const uint8_t *risky = b[2].b.buf, *flat = b[3].b.buf;
    const int64_t *stop = b[4].b.buf, *todo = b[6].b.buf;
    Py_ssize_t n = LEN(b[6]), positions = LEN(b[3]);
    if (LEN(b[4]) != positions || LEN(b[5]) != positions) {
        release(b, 7);
        return PyErr_Format(PyExc_ValueError, "suffix_lexemes: array lengths disagree");
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (todo[i] < 0 || todo[i] >= positions) {
            release(b, 7);
            return PyErr_Format(PyExc_ValueError, "suffix_lexemes: position %lld outside 0..%zd",
                                (long long)todo[i], positions);
        }
    Py_ssize_t cap = n + 1024, count = 0;
    uint8_t *seen = calloc(positions + 1, 1);
    int64_t *out[6];
    int failed = !seen;
    for (int k = 0; k < 6; k++) failed |= !(out[k] = malloc(sizeof(int64_t) * cap));
    int32_t *slot = failed ? NULL : malloc(sizeof(int32_t) * (positions + 1));
    int64_t *chain = NULL;
    failed |= !slot;
    Py_BEGIN_ALLOW_THREADS
    int64_t *pos = out[0], *term = out[1], *next = out[2], *la_at = out[3], *la_term = out[4], *depth = out[5];
    for (Py_ssize_t i = 0; !failed && i < n; i++)
        if (memo[todo[i]] == UNKNOWN && !seen[todo[i]]) seen[todo[i]] = 1, pos[count++] = todo[i];
    for (Py_ssize_t r = 0; !failed && r < count; r++) {
        term[r] = first_lexeme(delta, accept_next, risky, flat, pos[r], stop[pos[r]], &next[r], &la_at[r], &la_term[r]);
        int64_t k = next[r];
        if (term[r] < 0 || memo[k] != UNKNOWN || seen[k]) continue;
        if (count == cap) {
            cap *= 2;
            for (int j = 0; j < 6; j++) {
                int64_t *more = realloc(out[j], sizeof(int64_t) * cap);
                if (!more) { failed = 1; break; }
                out[j] = more;
            }
            pos = out[0], term = out[1], next = out[2], la_at = out[3], la_term = out[4], depth = out[5];
            if (failed) break;
        }
        seen[k] = 1, pos[count++] = k;
    }
    if (!failed && !(chain = malloc(sizeof(int64_t) * (count + 1)))) failed = 1;
    if (!failed) { /* each depth once: follow a position's continuations to a known depth, then back */
        for (Py_ssize_t r = 0; r < count; r++) slot[pos[r]] = (int32_t)r, depth[r] = -1;
        for (Py_ssize_t r0 = 0; r0 < count; r0++) {
            Py_ssize_t len = 0;
            int64_t r = r0, d = 0;
            while (depth[r] < 0) {
                chain[len++] = r;
                if (term[r] < 0 || !seen[next[r]]) break;
                r = slot[next[r]];
            }
            if (depth[r] >= 0) d = depth[r] + 1;
            while (len--) depth[chain[len]] = d++;
        }
    }
    Py_END_ALLOW_THREADS
    PyObject *result = NULL;
    if (failed) PyErr_NoMemory();
    else
        result = Py_BuildValue("(y#y#y#y#y#y#)", (char *)out[0], count * 8, (char *)out[1], count * 8,
                               (char *)out[2], count * 8, (char *)out[3], count * 8, (char *)out[4], count * 8,
                               (char *)out[5], count * 8);
    for (int k = 0; k < 6; k++) free(out[k]);
    free(seen), free(slot), free(chain);
    release(b, 7);
    return result;
}

/* intern_rows(term i64[K], next i64[K], depth i64[K], at i64[K], memo i32[N], ignored u8[T],
 *             rows_term i64[R], rows_next i64[R])
 * The suffix rows of suffix_lexemes' positions, shallowest first, written into memo at `at`:
 * DEAD, an END row (END, end state), a break on an ignored terminal (the row it continues
 * with), or a break row (term, the row it continues with), interned among the existing rows
 * (rows_term/next) and the ones made here; returns the new rows' (term, next) as i64 bytes. */
static PyObject *intern_rows(PyObject *self, PyObject *args) {
    PyObject *o[8];
    if (!PyArg_UnpackTuple(args, "intern_rows", 8, 8, &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7]))
        return NULL;
    static const Py_ssize_t sizes[8] = {8, 8, 8, 8, 4, 1, 8, 8};
    static const char *names[8] = {"term", "next", "depth", "at", "memo", "ignored", "rows_term", "rows_next"};
    Buf b[8];
    memset(b, 0, sizeof b);
    for (int i = 0; i < 8; i++)
        if (take(o[i], &b[i], sizes[i], i == 4, names[i]) < 0) {
            release(b, 8);
            return NULL;
        }
    const int64_t *term = b[0].b.buf, *next = b[1].b.buf, *depth = b[2].b.buf, *at = b[3].b.buf;
    const int64_t *rows_term = b[6].b.buf, *rows_next = b[7].b.buf;
    int32_t *memo = b[4].b.buf;
    const uint8_t *ignored = b[5].b.buf;
    Py_ssize_t k = LEN(b[0]), n = LEN(b[4]), t = LEN(b[5]), r = LEN(b[6]), max_depth = 0;
    if (LEN(b[1]) != k || LEN(b[2]) != k || LEN(b[3]) != k || LEN(b[7]) != r) {
        release(b, 8);
        return PyErr_Format(PyExc_ValueError, "intern_rows: array lengths disagree");
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        if (at[i] < 0 || at[i] >= n || depth[i] < 0 || depth[i] > k || term[i] < END || term[i] >= t ||
            (term[i] >= 0 && (next[i] < 0 || next[i] >= n))) {
            release(b, 8);
            return PyErr_Format(PyExc_ValueError, "intern_rows: entry %zd out of range", i);
        }
        if (depth[i] > max_depth) max_depth = depth[i];
    }
    Py_ssize_t cap = 16;
    while (cap < 2 * (r + k) + 16) cap *= 2;
    int64_t *keys = malloc(sizeof(int64_t) * cap), *ids = malloc(sizeof(int64_t) * cap);
    int64_t *new_term = malloc(sizeof(int64_t) * (k + 1)), *new_next = malloc(sizeof(int64_t) * (k + 1));
    Py_ssize_t *level = calloc(max_depth + 2, sizeof(Py_ssize_t)), *order = malloc(sizeof(Py_ssize_t) * (k + 1));
    if (!keys || !ids || !new_term || !new_next || !level || !order) {
        free(keys), free(ids), free(new_term), free(new_next), free(level), free(order);
        release(b, 8);
        return PyErr_NoMemory();
    }
    Py_ssize_t made = 0;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < cap; i++) ids[i] = -1;
#define SLOT(key) ((Py_ssize_t)(((uint64_t)(key) * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1))
#define KEY(a, c) ((((int64_t)(a) + 16) << 32) | (int64_t)(uint32_t)(c))
    for (Py_ssize_t i = 0; i < r; i++) {
        int64_t key = KEY(rows_term[i], rows_next[i]);
        Py_ssize_t h = SLOT(key);
        while (ids[h] >= 0 && keys[h] != key) h = (h + 1) & (cap - 1);
        if (ids[h] < 0) keys[h] = key, ids[h] = i;
    }
    for (Py_ssize_t i = 0; i < k; i++) level[depth[i] + 1]++; /* counting sort by depth */
    for (Py_ssize_t d = 1; d <= max_depth + 1; d++) level[d] += level[d - 1];
    for (Py_ssize_t i = 0; i < k; i++) order[level[depth[i]]++] = i;
    for (Py_ssize_t j = 0; j < k; j++) {
        Py_ssize_t i = order[j];
        int64_t a = term[i], c = next[i];
        if (a == DEAD) { memo[at[i]] = DEAD; continue; }
        if (a >= 0) {
            c = memo[c];
            if (c < 0) { /* DEAD, or (a caller's bug) a row not made yet */
                bad |= c != DEAD;
                memo[at[i]] = DEAD;
                continue;
            }
            if (ignored[a]) { memo[at[i]] = (int32_t)c; continue; }
        }
        int64_t key = KEY(a, c);
        Py_ssize_t h = SLOT(key);
        while (ids[h] >= 0 && keys[h] != key) h = (h + 1) & (cap - 1);
        if (ids[h] < 0) keys[h] = key, ids[h] = r + made, new_term[made] = a, new_next[made] = c, made++;
        memo[at[i]] = (int32_t)ids[h];
    }
#undef SLOT
#undef KEY
    Py_END_ALLOW_THREADS
    PyObject *result = NULL;
    if (bad) PyErr_SetString(PyExc_ValueError, "intern_rows: a break continues at a row that is not known");
    else result = Py_BuildValue("(y#y#)", (char *)new_term, made * 8, (char *)new_next, made * 8);
    free(keys), free(ids), free(new_term), free(new_next), free(level), free(order);
    release(b, 8);
    return result;
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS, "Walk token-trie subtrees from DFA states (see greatgramma/native.py)."},
    {"suffix_lexemes", suffix_lexemes, METH_VARARGS, "First lexemes of the suffix rows to compute (see greatgramma/native.py)."},
    {"intern_rows", intern_rows, METH_VARARGS, "Suffix rows interned, shallowest first (see greatgramma/native.py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", "Compiled maximal-munch loops.", -1, methods};

PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&module); }
