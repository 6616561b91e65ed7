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
 * subsets:        a regex terminal's DFA from its NFA (lexer._terminal_dfa, plain NFAs).
 * product:        the lexer DFA as the product of the terminals' DFAs (lexer.build_lexer).
 * refine:         its minimization (Hopcroft's partition refinement).
 * viable_rows:    the outcome rows viable from a parser stack (the context-dependent half of a mask).
 *
 * Arrays come as contiguous buffers of fixed item sizes (native.py converts them); the loops
 * release the GIL. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

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

/* take() for arguments o[0..n) into b, writable where bit i of `writable` is set; on a refusal
 * the ones taken are released and -1 returned (the exception set). */
static int take_all(PyObject **o, Buf *b, int n, const Py_ssize_t *sizes, const char *const *names, uint64_t writable) {
    memset(b, 0, sizeof(Buf) * n);
    for (int i = 0; i < n; i++)
        if (take(o[i], &b[i], sizes[i], (int)(writable >> i & 1), names[i]) < 0) {
            release(b, n);
            return -1;
        }
    return 0;
}

/* One string's outcome in a walk (the fields of walk's outputs). */
typedef struct {
    int8_t code;
    int64_t term, at, la_off, la_term, where, la_where;
} Outcome;

/* The tables a walk reads and its per-depth stack: before byte d, the DFA state, where the lexeme
 * last could end (-1: the entry fallback is still held, -2: nowhere) and as which terminal, the
 * column there and at that end. */
typedef struct {
    const int32_t *delta, *accept_next, *lcp;
    const uint8_t *risky, *flat;
    const int64_t *offsets;
    int64_t tab;
    int64_t *st, *off, *lt, *col, *lcol;
} Walker;

#define NEWLINE_SEEN ((int64_t)1 << 40)

/* The strings [lo, hi) of one subtree from DFA state0 after their first byte (entry fallback
 * la_off0), each string's outcome handed to emit(ctx, string, outcome) in order; a string that
 * dies at the same byte as the one before reuses its walk. Inlined into each caller, so that
 * its emit is a direct call and, with columns 0, the column bookkeeping drops out. */
static inline __attribute__((always_inline)) void walk_range(const Walker *w, int64_t lo, int64_t hi, int64_t state0,
                                                             int64_t la_off0, int columns,
                                                             void (*emit)(void *, int64_t, const Outcome *), void *ctx) {
    int64_t *st = w->st, *off = w->off, *lt = w->lt, *col = w->col, *lcol = w->lcol;
    int64_t valid = 0; /* stack entries 1..valid hold the previous string's walk */
    int64_t died = -1; /* the byte the previous string died at (-1: it did not) */
    Outcome last = {W_DROP, DEAD, 0, -2, DEAD, 0, 0}, res;
    st[1] = state0, off[1] = la_off0, lt[1] = DEAD, col[1] = 0, lcol[1] = 0;
    for (int64_t s = lo; s < hi; s++) {
        int64_t len = w->offsets[s + 1] - w->offsets[s];
        const uint8_t *bytes = w->flat + w->offsets[s];
        if (len == 1) {
            res = (Outcome){W_ONE, DEAD, 0, -2, DEAD, 0, 0};
            valid = 1, died = -1;
            emit(ctx, s, &res);
            continue;
        }
        int64_t shared = s == lo ? 1 : w->lcp[s];
        if (died >= 1 && died < shared) { /* dies at the same byte as the one before */
            emit(ctx, s, &last);
            continue;
        }
        int64_t d = shared < valid ? shared : valid;
        if (d < 1) d = 1;
        died = -1;
        for (; d < len; d++) {
            int64_t q = st[d], c = bytes[d];
            int32_t nxt = w->delta[q * 256 + c], here = w->accept_next[q * 256 + c];
            if (nxt == DEAD) {
                last = (Outcome){W_DROP, DEAD, 0, -2, DEAD, 0, 0};
                if (here != DEAD) last.code = W_BREAK, last.term = here, last.at = d, last.where = columns ? col[d] : 0;
                else if (off[d] >= 0) last.code = W_BREAK, last.term = lt[d], last.at = off[d], last.where = columns ? lcol[d] : 0;
                else if (off[d] == -1) last.code = W_FALLBACK;
                died = d;
                break;
            }
            int64_t o2 = here != DEAD ? d : off[d];
            st[d + 1] = nxt, off[d + 1] = w->risky[nxt] ? o2 : -2, lt[d + 1] = here != DEAD ? here : lt[d];
            if (columns) {
                lcol[d + 1] = here != DEAD ? col[d] : lcol[d];
                col[d + 1] = c == 10 ? NEWLINE_SEEN : col[d] + (c == 32) + (c == 9 ? w->tab : 0);
            }
        }
        if (died >= 0) {
            valid = died;
            emit(ctx, s, &last);
        } else {
            valid = len;
            res = (Outcome){W_END, DEAD, st[len], off[len], lt[len], columns ? col[len] : 0, columns ? lcol[len] : 0};
            emit(ctx, s, &res);
        }
    }
}

/* Checks the ranges of walk and walk_kept against the strings; their total size (-1: raised). */
static Py_ssize_t check_ranges(const char *name, const int64_t *offsets, Py_ssize_t strings, const int64_t *lo,
                               const int64_t *hi, Py_ssize_t pairs, Py_ssize_t *width) {
    Py_ssize_t total = 0;
    *width = 0;
    for (Py_ssize_t p = 0; p < pairs; p++) {
        if (lo[p] < 0 || hi[p] > strings || lo[p] > hi[p]) {
            PyErr_Format(PyExc_ValueError, "%s: pair %zd: string range [%lld, %lld) outside 0..%zd", name, p,
                         (long long)lo[p], (long long)hi[p], strings);
            return -1;
        }
        total += hi[p] - lo[p];
        for (int64_t s = lo[p]; s < hi[p]; s++)
            if (offsets[s + 1] - offsets[s] > *width) *width = offsets[s + 1] - offsets[s];
    }
    return total;
}

/* A walker over the tables; its stack holds strings up to width bytes (NULL: out of memory, raised). */
static int64_t *walker_init(Walker *w, const Buf *b, int64_t tab, Py_ssize_t width) {
    int64_t *st = PyMem_Malloc(sizeof(int64_t) * 5 * (width + 2));
    if (!st) {
        PyErr_NoMemory();
        return NULL;
    }
    *w = (Walker){b[0].b.buf, b[1].b.buf, b[5].b.buf, b[2].b.buf, b[3].b.buf, b[4].b.buf, tab, st,
                  st + (width + 2), st + 2 * (width + 2), st + 3 * (width + 2), st + 4 * (width + 2)};
    return st;
}

typedef struct {
    int8_t *code;
    int64_t *term, *at, *la_off, *la_term, *where, *la_where;
    Py_ssize_t out;
} AllOut;

static void emit_all(void *ctx, int64_t s, const Outcome *o) {
    AllOut *a = ctx;
    Py_ssize_t i = a->out++;
    a->code[i] = o->code, a->term[i] = o->term, a->at[i] = o->at, a->where[i] = o->where;
    int end = o->code == W_END;
    a->la_off[i] = end ? o->la_off : -2, a->la_term[i] = end ? o->la_term : DEAD, a->la_where[i] = end ? o->la_where : 0;
}

/* walk(delta i32[Q*256], accept_next i32[Q*256], risky u8[Q], flat u8[], offsets i64[S+1],
 *      lcp i32[S], lo i64[P], hi i64[P], state i64[P], la_off i64[P], tab,
 *      code i8[T], term i64[T], at i64[T], la_off_out i64[T], la_term_out i64[T], where i64[T], la_where i64[T])
 * with T = sum(hi - lo): per string of each pair's range [lo, hi) in turn, its outcome; where /
 * la_where: the column where the first lexeme (or the string) / the last possible end is
 * (NEWLINE_SEEN + blanks since a newline in the string, or blanks since byte 1; a tab counts tab). */
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
    if (take_all(o, b, WALK_ARGS, sizes, names, ~0ull << 10) < 0) return NULL;
    const int64_t *offsets = b[4].b.buf, *lo = b[6].b.buf, *hi = b[7].b.buf, *state0 = b[8].b.buf,
                  *la_off0 = b[9].b.buf;
    Py_ssize_t pairs = LEN(b[6]), strings = LEN(b[4]) - 1, width;
    if (LEN(b[7]) != pairs || LEN(b[8]) != pairs || LEN(b[9]) != pairs || LEN(b[5]) < strings) {
        release(b, WALK_ARGS);
        return PyErr_Format(PyExc_ValueError, "walk: array lengths disagree");
    }
    Py_ssize_t total = check_ranges("walk", offsets, strings, lo, hi, pairs, &width);
    for (int i = 10; total >= 0 && i < WALK_ARGS; i++)
        if (LEN(b[i]) < total) {
            PyErr_Format(PyExc_ValueError, "walk: %s holds fewer than %zd entries", names[i], total);
            total = -1;
        }
    Walker w;
    int64_t *stack = total < 0 ? NULL : walker_init(&w, b, tab, width);
    if (!stack) {
        release(b, WALK_ARGS);
        return NULL;
    }
    AllOut a = {b[10].b.buf, b[11].b.buf, b[12].b.buf, b[13].b.buf, b[14].b.buf, b[15].b.buf, b[16].b.buf, 0};
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t p = 0; p < pairs; p++) walk_range(&w, lo[p], hi[p], state0[p], la_off0[p], 1, emit_all, &a);
    Py_END_ALLOW_THREADS
    PyMem_Free(stack);
    release(b, WALK_ARGS);
    Py_RETURN_NONE;
}

#define UNKNOWN (-7)
#define NO_TERM (-3)
#define FALLBACK (-4)
#define END_HELD (-5)

typedef struct {
    const int32_t *suffix;
    const uint8_t *ignored;
    const int64_t *offsets;
    Py_ssize_t nterms;
    int64_t state0, held, origin;
    int64_t *strings, *first, *rest, *orig, *fix_at, *fix_off, *fix_term, *unknown;
    uint8_t *held_pair;
    Py_ssize_t kept, fixes, unknowns, bad;
} KeptOut;

static void emit_kept(void *ctx, int64_t s, const Outcome *o) {
    KeptOut *k = ctx;
    int64_t first, rest;
    switch (o->code) {
    case W_ONE:
        first = k->held ? END_HELD : END, rest = k->state0;
        break;
    case W_FALLBACK:
        first = FALLBACK, rest = 0;
        break;
    case W_BREAK: {
        int64_t pos = k->offsets[s] + o->at;
        rest = k->suffix[pos];
        if (rest == DEAD) return;
        if (rest == UNKNOWN) k->unknown[k->unknowns++] = k->kept, rest = pos;
        if (o->term < 0 || o->term >= k->nterms) {
            k->bad = 1;
            return;
        }
        first = k->ignored[o->term] ? NO_TERM : o->term;
        break;
    }
    case W_END:
        first = o->la_off == -1 ? END_HELD : END, rest = o->at;
        if (o->la_off >= 0)
            k->fix_at[k->fixes] = k->kept, k->fix_off[k->fixes] = o->la_off, k->fix_term[k->fixes++] = o->la_term;
        break;
    default: /* W_DROP */
        return;
    }
    Py_ssize_t i = k->kept++;
    k->strings[i] = s, k->first[i] = first, k->rest[i] = rest, k->orig[i] = k->origin;
    if (first == FALLBACK || first == END_HELD) k->held_pair[k->origin] = 1;
}

/* walk_kept(delta, accept_next, risky, flat, offsets, lcp, lo, hi, state, la_off (as walk, no
 *           columns), suffix i32[N], ignored u8[terms],
 *           strings i64[T], first i64[T], rest i64[T], origin i64[T], fix_at i64[T], fix_off i64[T],
 *           fix_term i64[T], unknown i64[T], held u8[P]) -> (kept, fixes, unknowns)
 * walk's outcomes as subtree results (SubtreeWalks' Walk, for a lexer without columns), the
 * strings that are dead left out: the first `kept` entries of strings/first/rest/origin (the
 * pair's index). A break's rest is the suffix row where it starts; `fixes` ends that hold a
 * fallback inside the string (first END, rest the DFA state) are listed for the caller to turn
 * into extended states (index into the kept entries, offset, terminal); so are the `unknowns`
 * breaks whose suffix row is not computed yet (index; their rest is the flat position instead);
 * held[p] is set to 1 where some result of pair p is held (FALLBACK or END_HELD), else left. */
#define KEPT_ARGS 21
static PyObject *walk_kept(PyObject *self, PyObject *args) {
    PyObject *o[KEPT_ARGS];
    if (!PyArg_UnpackTuple(args, "walk_kept", KEPT_ARGS, KEPT_ARGS, &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6],
                           &o[7], &o[8], &o[9], &o[10], &o[11], &o[12], &o[13], &o[14], &o[15], &o[16], &o[17],
                           &o[18], &o[19], &o[20]))
        return NULL;
    static const Py_ssize_t sizes[KEPT_ARGS] = {4, 4, 1, 1, 8, 4, 8, 8, 8, 8, 4, 1, 8, 8, 8, 8, 8, 8, 8, 8, 1};
    static const char *names[KEPT_ARGS] = {"delta", "accept_next", "risky", "flat", "offsets", "lcp", "lo", "hi",
                                           "state", "la_off", "suffix", "ignored", "strings", "first", "rest",
                                           "origin", "fix_at", "fix_off", "fix_term", "unknown", "held"};
    Buf b[KEPT_ARGS];
    if (take_all(o, b, KEPT_ARGS, sizes, names, ~0ull << 12) < 0) return NULL;
    const int64_t *offsets = b[4].b.buf, *lo = b[6].b.buf, *hi = b[7].b.buf, *state0 = b[8].b.buf,
                  *la_off0 = b[9].b.buf;
    Py_ssize_t pairs = LEN(b[6]), strings = LEN(b[4]) - 1, width;
    if (LEN(b[7]) != pairs || LEN(b[8]) != pairs || LEN(b[9]) != pairs || LEN(b[5]) < strings ||
        LEN(b[10]) < offsets[strings]) {
        release(b, KEPT_ARGS);
        return PyErr_Format(PyExc_ValueError, "walk_kept: array lengths disagree");
    }
    Py_ssize_t total = check_ranges("walk_kept", offsets, strings, lo, hi, pairs, &width);
    for (int i = 12; total >= 0 && i < KEPT_ARGS - 1; i++)
        if (LEN(b[i]) < total) {
            PyErr_Format(PyExc_ValueError, "walk_kept: %s holds fewer than %zd entries", names[i], total);
            total = -1;
        }
    if (total >= 0 && LEN(b[20]) < pairs) {
        PyErr_Format(PyExc_ValueError, "walk_kept: held holds fewer than %zd entries", pairs);
        total = -1;
    }
    Walker w;
    int64_t *stack = total < 0 ? NULL : walker_init(&w, b, 0, width);
    if (!stack) {
        release(b, KEPT_ARGS);
        return NULL;
    }
    KeptOut k = {b[10].b.buf, b[11].b.buf, offsets, LEN(b[11]), 0, 0, 0, b[12].b.buf, b[13].b.buf, b[14].b.buf,
                 b[15].b.buf, b[16].b.buf, b[17].b.buf, b[18].b.buf, b[19].b.buf, b[20].b.buf, 0, 0, 0, 0};
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t p = 0; p < pairs; p++) {
        k.state0 = state0[p], k.held = la_off0[p] == -1, k.origin = p;
        walk_range(&w, lo[p], hi[p], state0[p], la_off0[p], 0, emit_kept, &k);
    }
    Py_END_ALLOW_THREADS
    PyMem_Free(stack);
    release(b, KEPT_ARGS);
    if (k.bad) return PyErr_Format(PyExc_ValueError, "walk_kept: a terminal outside the %zd of ignored", LEN(b[11]));
    return Py_BuildValue("(nnn)", k.kept, k.fixes, k.unknowns);
}

/* resolve_held(strings i64[K], first i64[K], rest i64[K], part i64[K], before i64[P], own, offsets i64[S+1],
 *              suffix i32[N], ignored u8[terms], keep u8[K], unknown i64[K], holding i64[K]) -> (unknowns, holdings)
 * Subtree results as entered by a lexer state that accepts before[part] just before the part's
 * byte (DEAD: nothing) and has a fallback of its own (own != 0) or not, in place (see
 * SubtreeWalks.resolve_entered): a string that dies holding the entry fallback backs up to just
 * before itself (the terminal, then the suffix row at its start; where that row is not computed
 * yet, its index is listed in `unknown` and its rest is the flat position), or to the state's own
 * fallback (kept as FALLBACK), or is dropped (keep 0); one that ends holding it ends (END), and
 * where it holds a fallback its index is listed in `holding` for the caller's extended states. */
#define RESOLVE_BUFS 11
static PyObject *resolve_held(PyObject *self, PyObject *args) {
    PyObject *o[RESOLVE_BUFS];
    int own;
    if (!PyArg_ParseTuple(args, "OOOOOpOOOOOO:resolve_held", &o[0], &o[1], &o[2], &o[3], &o[4], &own, &o[5], &o[6],
                          &o[7], &o[8], &o[9], &o[10]))
        return NULL;
    static const Py_ssize_t sizes[RESOLVE_BUFS] = {8, 8, 8, 8, 8, 8, 4, 1, 1, 8, 8};
    static const char *names[RESOLVE_BUFS] = {"strings", "first", "rest", "part", "before", "offsets", "suffix",
                                              "ignored", "keep", "unknown", "holding"};
    Buf b[RESOLVE_BUFS];
    if (take_all(o, b, RESOLVE_BUFS, sizes, names, (1ull << 1 | 1ull << 2 | ~0ull << 8)) < 0) return NULL;
    const int64_t *strings = b[0].b.buf, *part = b[3].b.buf, *before = b[4].b.buf, *offsets = b[5].b.buf;
    int64_t *first = b[1].b.buf, *rest = b[2].b.buf, *unknown = b[9].b.buf, *holding = b[10].b.buf;
    const int32_t *suffix = b[6].b.buf;
    const uint8_t *ignored = b[7].b.buf;
    uint8_t *keep = b[8].b.buf;
    Py_ssize_t n = LEN(b[0]), nparts = LEN(b[4]), nstrings = LEN(b[5]) - 1, nterms = LEN(b[7]);
    const char *bad = NULL;
    if (LEN(b[1]) != n || LEN(b[2]) != n || LEN(b[3]) != n || LEN(b[8]) < n || LEN(b[9]) < n || LEN(b[10]) < n ||
        LEN(b[6]) < offsets[nstrings])
        bad = "array lengths disagree";
    for (Py_ssize_t i = 0; !bad && i < n; i++)
        if (part[i] < 0 || part[i] >= nparts || strings[i] < 0 || strings[i] >= nstrings) bad = "a part or string out of range";
        else if (before[part[i]] < DEAD || before[part[i]] >= nterms) bad = "a terminal outside ignored";
    if (bad) {
        release(b, RESOLVE_BUFS);
        return PyErr_Format(PyExc_ValueError, "resolve_held: %s", bad);
    }
    Py_ssize_t unknowns = 0, holdings = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t f = first[i], t = before[part[i]];
        keep[i] = 1;
        if (f == FALLBACK) {
            if (t == DEAD) {
                keep[i] = (uint8_t)own;
                continue;
            }
            int64_t pos = offsets[strings[i]], r = suffix[pos];
            first[i] = ignored[t] ? NO_TERM : t;
            if (r == UNKNOWN) unknown[unknowns++] = i, r = pos;
            else if (r == DEAD) keep[i] = 0;
            rest[i] = r;
        } else if (f == END_HELD) {
            first[i] = END;
            if (t != DEAD || own) holding[holdings++] = i;
        }
    }
    Py_END_ALLOW_THREADS
    release(b, RESOLVE_BUFS);
    return Py_BuildValue("(nn)", unknowns, holdings);
}

/* block_codes(first i64[K], rest i64[K], seg i64[K], strings i64[K], base i64[nseg], width, code i32[M],
 *             firsts u8[nseg * width], held u8[nseg], ends_seg i64[K], ends_state i64[K]) -> ends
 * The status codes of subtree results (blocks.StatusLayout with `width` first kinds; first DEAD:
 * a dead string, code 0), written at code[base[seg] + string]; per segment, the first kinds met
 * (firsts[seg * width + first - NO_TERM]) and whether a result is held (FALLBACK, END_HELD); the
 * (segment, end state) pairs met, once each, in the first `ends` entries of ends_seg/ends_state. */
#define CODES_ARGS 10
static PyObject *block_codes(PyObject *self, PyObject *args) {
    PyObject *o[CODES_ARGS];
    long long width;
    if (!PyArg_ParseTuple(args, "OOOOOLOOOOO:block_codes", &o[0], &o[1], &o[2], &o[3], &o[4], &width, &o[5], &o[6],
                          &o[7], &o[8], &o[9]))
        return NULL;
    static const Py_ssize_t sizes[CODES_ARGS] = {8, 8, 8, 8, 8, 4, 1, 1, 8, 8};
    static const char *names[CODES_ARGS] = {"first", "rest", "seg", "strings", "base", "code", "firsts", "held",
                                            "ends_seg", "ends_state"};
    Buf b[CODES_ARGS];
    if (take_all(o, b, CODES_ARGS, sizes, names, ~0ull << 5) < 0) return NULL;
    const int64_t *first = b[0].b.buf, *rest = b[1].b.buf, *seg = b[2].b.buf, *strings = b[3].b.buf, *base = b[4].b.buf;
    int32_t *code = b[5].b.buf;
    uint8_t *firsts = b[6].b.buf, *held = b[7].b.buf;
    int64_t *ends_seg = b[8].b.buf, *ends_state = b[9].b.buf;
    Py_ssize_t n = LEN(b[0]), nseg = LEN(b[4]), m = LEN(b[5]), max_end = -1;
    const char *bad = NULL;
    if (LEN(b[1]) != n || LEN(b[2]) != n || LEN(b[3]) != n || LEN(b[8]) < n || LEN(b[9]) < n || width < 1 ||
        LEN(b[6]) < nseg * width || LEN(b[7]) < nseg)
        bad = "array lengths disagree";
    for (Py_ssize_t i = 0; !bad && i < n; i++) {
        int64_t f = first[i], at = seg[i] >= 0 && seg[i] < nseg ? base[seg[i]] + strings[i] : -1;
        if (at < 0 || at >= m) bad = "a segment or string out of range";
        else if (f == END && rest[i] > max_end) max_end = rest[i];
        else if (f >= NO_TERM && f != END && f != DEAD && (f - NO_TERM >= width || rest[i] < 0))
            bad = "a first kind or row out of range";
        else if (f == END && rest[i] < 0) bad = "an end state out of range";
    }
    if (bad) {
        release(b, CODES_ARGS);
        return PyErr_Format(PyExc_ValueError, "block_codes: %s", bad);
    }
    int64_t *stamp = calloc(max_end + 2, sizeof(int64_t)); /* stamp[e]: 1 + the last segment e was met in */
    if (!stamp) {
        release(b, CODES_ARGS);
        return PyErr_NoMemory();
    }
    Py_ssize_t ends = 0;
    Py_BEGIN_ALLOW_THREADS
    memset(firsts, 0, nseg * width), memset(held, 0, nseg);
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t f = first[i], r = rest[i], sg = seg[i], c = 0;
        if (f == END) {
            c = 2 * r + 1;
            if (stamp[r] != sg + 1) stamp[r] = sg + 1, ends_seg[ends] = sg, ends_state[ends++] = r;
        } else if (f == DEAD) {
            c = 0;
        } else if (f >= NO_TERM) {
            c = 2 + 2 * (r * width + f - NO_TERM);
            firsts[sg * width + f - NO_TERM] = 1;
        } else if (f == FALLBACK || f == END_HELD)
            held[sg] = 1;
        code[base[sg] + strings[i]] = (int32_t)c;
    }
    Py_END_ALLOW_THREADS
    free(stamp);
    release(b, CODES_ARGS);
    return PyLong_FromSsize_t(ends);
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

/* suffix_lexemes(delta i32[Q*256], accept_next i32[Q*256], risky u8[Q], flat u8[N], stop i64[N],
 *                memo i32[N], todo i64[T], slot i32[N+1], pos i32[C], term i32[C], next i32[C],
 *                la_at i32[C], la_term i32[C], depth i32[C]) -> count
 * The first lexemes of the suffix rows not yet known (memo UNKNOWN) at positions todo and at
 * every position a break there continues at, recursively, written into the first count entries
 * of the outputs: per position as first_lexeme gives it, and depth 0 where the rest is known
 * (END, DEAD, or a break continuing at a known row), else 1 + the continuation's depth. The
 * caller allocates the outputs (C: one entry per position, as each is met once at most; numpy
 * leaves untouched pages unmapped) and slot, all zero, which is left all zero (kept between
 * calls, it is not cleared again). */
#define LEXEMES_BUFS 14
static PyObject *suffix_lexemes(PyObject *self, PyObject *args) {
    PyObject *o[LEXEMES_BUFS];
    if (!PyArg_UnpackTuple(args, "suffix_lexemes", LEXEMES_BUFS, LEXEMES_BUFS, &o[0], &o[1], &o[2], &o[3], &o[4],
                           &o[5], &o[6], &o[7], &o[8], &o[9], &o[10], &o[11], &o[12], &o[13]))
        return NULL;
    static const Py_ssize_t sizes[LEXEMES_BUFS] = {4, 4, 1, 1, 8, 4, 8, 4, 4, 4, 4, 4, 4, 4};
    static const char *names[LEXEMES_BUFS] = {"delta", "accept_next", "risky", "flat", "stop", "memo", "todo",
                                              "slot", "pos", "term", "next", "la_at", "la_term", "depth"};
    Buf b[LEXEMES_BUFS];
    if (take_all(o, b, LEXEMES_BUFS, sizes, names, ~0ull << 7) < 0) return NULL;
    const int32_t *delta = b[0].b.buf, *accept_next = b[1].b.buf, *memo = b[5].b.buf;
    const uint8_t *risky = b[2].b.buf, *flat = b[3].b.buf;
    const int64_t *stop = b[4].b.buf, *todo = b[6].b.buf;
    int32_t *slot = b[7].b.buf, *pos = b[8].b.buf, *term = b[9].b.buf, *next = b[10].b.buf, *la_at = b[11].b.buf,
            *la_term = b[12].b.buf, *depth = b[13].b.buf;
    Py_ssize_t n = LEN(b[6]), positions = LEN(b[3]), cap = LEN(b[8]);
    const char *bad = NULL;
    if (LEN(b[4]) != positions || LEN(b[5]) != positions || LEN(b[7]) != positions + 1 || positions >= INT32_MAX)
        bad = "array lengths disagree";
    for (int i = 9; !bad && i < LEXEMES_BUFS; i++)
        if (LEN(b[i]) != cap) bad = "output lengths disagree";
    if (!bad && cap < positions) bad = "outputs shorter than the positions"; /* each is met once at most */
    for (Py_ssize_t i = 0; !bad && i < n; i++)
        if (todo[i] < 0 || todo[i] >= positions) bad = "a position outside the strings";
    if (bad) {
        release(b, LEXEMES_BUFS);
        return PyErr_Format(PyExc_ValueError, "suffix_lexemes: %s", bad);
    }
    int32_t *chain = malloc(sizeof(int32_t) * (cap + 1));
    if (!chain) {
        release(b, LEXEMES_BUFS);
        return PyErr_NoMemory();
    }
    /* slot[p]: 1 + the output row of position p, 0 where not met */
    Py_ssize_t count = 0, outside = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++)
        if (memo[todo[i]] == UNKNOWN && !slot[todo[i]]) pos[count] = (int32_t)todo[i], slot[todo[i]] = (int32_t)++count;
    for (Py_ssize_t r = 0; r < count; r++) {
        int64_t nx, la, lt, end = stop[pos[r]];
        if (end <= pos[r] || end > positions) { /* (a string's end is after its positions) */
            outside = 1, term[r] = DEAD, next[r] = DEAD, la_at[r] = -1, la_term[r] = DEAD;
            continue;
        }
        term[r] = (int32_t)first_lexeme(delta, accept_next, risky, flat, pos[r], end, &nx, &la, &lt);
        next[r] = (int32_t)nx, la_at[r] = (int32_t)la, la_term[r] = (int32_t)lt;
        if (term[r] < 0 || memo[nx] != UNKNOWN || slot[nx]) continue;
        pos[count] = (int32_t)nx, slot[nx] = (int32_t)++count;
    }
    /* each depth once: follow a position's continuations to a known depth, then back */
    for (Py_ssize_t r = 0; r < count; r++) depth[r] = -1;
    for (Py_ssize_t r0 = 0; r0 < count; r0++) {
        Py_ssize_t len = 0;
        int32_t r = (int32_t)r0, d = 0;
        while (depth[r] < 0) {
            chain[len++] = r;
            if (term[r] < 0 || !slot[next[r]]) break;
            r = slot[next[r]] - 1;
        }
        if (depth[r] >= 0) d = depth[r] + 1;
        while (len--) depth[chain[len]] = d++;
    }
    for (Py_ssize_t r = 0; r < count; r++) slot[pos[r]] = 0; /* left as found */
    Py_END_ALLOW_THREADS
    free(chain);
    release(b, LEXEMES_BUFS);
    if (outside) return PyErr_Format(PyExc_ValueError, "suffix_lexemes: a position outside its string");
    return PyLong_FromSsize_t(count);
}

/* intern_rows' hash table (keys, ids; id -1: empty) at twice the size, its entries placed again;
 * -1 where memory runs out (the table is then left as it was). */
static int grow_table(int64_t **keys, int64_t **ids, Py_ssize_t *cap) {
    Py_ssize_t size = 2 * *cap;
    int64_t *k = malloc(sizeof(int64_t) * size), *d = malloc(sizeof(int64_t) * size);
    if (!k || !d) {
        free(k), free(d);
        return -1;
    }
    for (Py_ssize_t i = 0; i < size; i++) d[i] = -1;
    for (Py_ssize_t i = 0; i < *cap; i++)
        if ((*ids)[i] >= 0) {
            Py_ssize_t h = (Py_ssize_t)(((uint64_t)(*keys)[i] * 0x9E3779B97F4A7C15ull) >> 20) & (size - 1);
            while (d[h] >= 0) h = (h + 1) & (size - 1);
            k[h] = (*keys)[i], d[h] = (*ids)[i];
        }
    free(*keys), free(*ids);
    *keys = k, *ids = d, *cap = size;
    return 0;
}

/* intern_rows(term i32[K], next i32[K], depth i32[K], at i32[K], memo i32[N], ignored u8[T],
 *             rows_term i64[R], rows_next i64[R])
 * The suffix rows of suffix_lexemes' positions, shallowest first, written into memo at `at`:
 * DEAD, an END row (END, end state), a break on an ignored terminal (the row it continues
 * with), or a break row (term, the row it continues with), interned among the existing rows
 * (rows_term/next) and the ones made here; returns the new rows' (term, next) as i64 bytes. */
static PyObject *intern_rows(PyObject *self, PyObject *args) {
    PyObject *o[8];
    if (!PyArg_UnpackTuple(args, "intern_rows", 8, 8, &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7]))
        return NULL;
    static const Py_ssize_t sizes[8] = {4, 4, 4, 4, 4, 1, 8, 8};
    static const char *names[8] = {"term", "next", "depth", "at", "memo", "ignored", "rows_term", "rows_next"};
    Buf b[8];
    if (take_all(o, b, 8, sizes, names, 1ull << 4) < 0) return NULL;
    const int32_t *term = b[0].b.buf, *next = b[1].b.buf, *depth = b[2].b.buf, *at = b[3].b.buf;
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
    Py_ssize_t cap = 1024; /* a hash table of rows at most half full, grown as rows are made (few are) */
    while (cap < 2 * r + 16) cap *= 2;
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
        if (ids[h] < 0) {
            keys[h] = key, ids[h] = r + made, new_term[made] = a, new_next[made] = c, made++;
            if (2 * (r + made) > cap && grow_table(&keys, &ids, &cap) < 0) { bad = 2; break; }
            h = SLOT(key);
            while (keys[h] != key) h = (h + 1) & (cap - 1);
        }
        memo[at[i]] = (int32_t)ids[h];
    }
#undef SLOT
#undef KEY
    Py_END_ALLOW_THREADS
    PyObject *result = NULL;
    if (bad == 2) PyErr_NoMemory();
    else if (bad) PyErr_SetString(PyExc_ValueError, "intern_rows: a break continues at a row that is not known");
    else result = Py_BuildValue("(y#y#)", (char *)new_term, made * 8, (char *)new_next, made * 8);
    free(keys), free(ids), free(new_term), free(new_next), free(level), free(order);
    release(b, 8);
    return result;
}

/* product(nclass, base i64[T+1], move_ptr i64[G+1], move_class i32[M], move_to i32[M], accepting u8[G],
 *         before_id i32[G], before u8[K*256], rank i32[T], max_states, seconds)
 * The lexer DFA as the product of the terminals' DFAs (global states: terminal t's state s is
 * base[t] + s; moves by class, ascending): states are tuples of live components in terminal
 * order, numbered as met (a state's new targets in class order), from the tuple of start states.
 * Per state: its row over classes, the terminal it accepts (the best-ranked accepting component)
 * and, per next byte, the one accepted before that byte (components whose before_id is -1 accept
 * before any byte, others before the bytes of before[before_id]). Returns (code, states, rows,
 * accept, accept_next): code 0, or 1 past max_states, or 2 past `seconds` (< 0: no limit). */
static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct {
    int32_t *pool;      /* tuple components, tuple i at pool[start[i]..start[i+1]) */
    int64_t *start;
    Py_ssize_t n, pool_cap, cap;
    int32_t *table;     /* open addressing: tuple id or -1 */
    Py_ssize_t table_cap;
} Tuples;

static uint64_t hash_seq(const int32_t *x, Py_ssize_t n) {
    uint64_t h = 0x243F6A8885A308D3ull ^ (uint64_t)n;
    for (Py_ssize_t i = 0; i < n; i++) h = (h ^ (uint32_t)x[i]) * 0x100000001B3ull, h ^= h >> 29;
    return h * 0x9E3779B97F4A7C15ull;
}

/* the id of tuple x (interned if new: then the id is the former count), or -1 on no memory */
static Py_ssize_t intern_tuple(Tuples *T, const int32_t *x, Py_ssize_t len) {
    if (2 * (T->n + 1) > T->table_cap) {
        Py_ssize_t cap = T->table_cap * 2;
        int32_t *table = malloc(sizeof(int32_t) * cap);
        if (!table) return -1;
        for (Py_ssize_t i = 0; i < cap; i++) table[i] = -1;
        for (Py_ssize_t id = 0; id < T->n; id++) {
            uint64_t h = hash_seq(T->pool + T->start[id], T->start[id + 1] - T->start[id]) >> 16;
            Py_ssize_t k = (Py_ssize_t)(h & (cap - 1));
            while (table[k] >= 0) k = (k + 1) & (cap - 1);
            table[k] = (int32_t)id;
        }
        free(T->table);
        T->table = table, T->table_cap = cap;
    }
    Py_ssize_t mask = T->table_cap - 1, k = (Py_ssize_t)((hash_seq(x, len) >> 16) & mask);
    for (; T->table[k] >= 0; k = (k + 1) & mask) {
        int32_t id = T->table[k];
        if (T->start[id + 1] - T->start[id] == len && !memcmp(T->pool + T->start[id], x, sizeof(int32_t) * len))
            return id;
    }
    if (T->n + 2 > T->cap) {
        int64_t *more = realloc(T->start, sizeof(int64_t) * T->cap * 2);
        if (!more) return -1;
        T->start = more, T->cap *= 2;
    }
    while (T->start[T->n] + len > T->pool_cap) {
        int32_t *more = realloc(T->pool, sizeof(int32_t) * T->pool_cap * 2);
        if (!more) return -1;
        T->pool = more, T->pool_cap *= 2;
    }
    memcpy(T->pool + T->start[T->n], x, sizeof(int32_t) * len);
    T->start[T->n + 1] = T->start[T->n] + len;
    T->table[k] = (int32_t)T->n;
    return T->n++;
}

#define PRODUCT_ARGS 8
static PyObject *product(PyObject *self, PyObject *args) {
    PyObject *o[PRODUCT_ARGS];
    Py_ssize_t nclass, max_states;
    double seconds;
    if (!PyArg_ParseTuple(args, "nOOOOOOOOnd:product", &nclass, &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6],
                          &o[7], &max_states, &seconds))
        return NULL;
    static const Py_ssize_t sizes[PRODUCT_ARGS] = {8, 8, 4, 4, 1, 4, 1, 4};
    static const char *names[PRODUCT_ARGS] = {"base", "move_ptr", "move_class", "move_to", "accepting",
                                              "before_id", "before", "rank"};
    Buf b[PRODUCT_ARGS];
    if (take_all(o, b, PRODUCT_ARGS, sizes, names, 0) < 0) return NULL;
    const int64_t *base = b[0].b.buf, *move_ptr = b[1].b.buf;
    const int32_t *move_class = b[2].b.buf, *move_to = b[3].b.buf, *before_id = b[5].b.buf, *rank = b[7].b.buf;
    const uint8_t *accepting = b[4].b.buf, *before = b[6].b.buf;
    Py_ssize_t nterm = LEN(b[0]) - 1, g = LEN(b[4]), m = LEN(b[2]), kb = LEN(b[6]) / 256;
    int ok = nterm >= 1 && nclass >= 1 && nclass <= 256 && LEN(b[1]) == g + 1 && LEN(b[3]) == m && LEN(b[5]) == g &&
             LEN(b[7]) == nterm && base[0] == 0 && base[nterm] == g && move_ptr[0] == 0 && move_ptr[g] == m;
    for (Py_ssize_t t = 0; ok && t < nterm; t++) ok = base[t] < base[t + 1] && rank[t] >= 0;
    for (Py_ssize_t q = 0; ok && q < g; q++) ok = move_ptr[q] <= move_ptr[q + 1] && before_id[q] >= -1 && before_id[q] < kb;
    for (Py_ssize_t j = 0; ok && j < m; j++) ok = move_class[j] >= 0 && move_class[j] < nclass && move_to[j] >= 0 && move_to[j] < g;
    if (!ok) {
        release(b, PRODUCT_ARGS);
        return PyErr_Format(PyExc_ValueError, "product: inconsistent arrays");
    }
    int32_t *term_of = malloc(sizeof(int32_t) * g);
    Tuples T = {malloc(sizeof(int32_t) * 4096), malloc(sizeof(int64_t) * 1024), 0, 4096, 1024, NULL, 0};
    Py_ssize_t rows_cap = 1024;
    int32_t *rows = malloc(sizeof(int32_t) * rows_cap * nclass), *acc = malloc(sizeof(int32_t) * rows_cap);
    int32_t *acc_next = malloc(sizeof(int32_t) * rows_cap * 256);
    int32_t *count = calloc(nclass + 1, sizeof(int32_t)), *bucket = malloc(sizeof(int32_t) * (m + nterm + 1));
    int32_t *fill = malloc(sizeof(int32_t) * (nclass + 1)), *tup = malloc(sizeof(int32_t) * (nterm + 1));
    int32_t best[256];
    T.table_cap = 1024;
    T.table = malloc(sizeof(int32_t) * T.table_cap);
    int code = 0, nomem = !term_of || !T.pool || !T.start || !rows || !acc || !acc_next || !count || !bucket || !fill ||
                         !tup || !T.table;
    Py_ssize_t i = 0;
    Py_BEGIN_ALLOW_THREADS
    double deadline = seconds >= 0 ? now_s() + seconds : -1;
    if (!nomem) {
        for (Py_ssize_t k = 0; k < T.table_cap; k++) T.table[k] = -1;
        for (Py_ssize_t t = 0; t < nterm; t++)
            for (int64_t q = base[t]; q < base[t + 1]; q++) term_of[q] = (int32_t)t;
        for (Py_ssize_t t = 0; t < nterm; t++) tup[t] = (int32_t)base[t];
        T.start[0] = 0;
        if (intern_tuple(&T, tup, nterm) < 0) nomem = 1;
    }
    for (i = 0; !nomem && !code && i < T.n; i++) {
        if (i % 256 == 0 && deadline >= 0 && now_s() > deadline) { code = 2; break; }
        if (i >= rows_cap) {
            rows_cap *= 2;
            int32_t *r2 = realloc(rows, sizeof(int32_t) * rows_cap * nclass);
            if (r2) rows = r2;
            int32_t *a2 = realloc(acc, sizeof(int32_t) * rows_cap);
            if (a2) acc = a2;
            int32_t *n2 = realloc(acc_next, sizeof(int32_t) * rows_cap * 256);
            if (n2) acc_next = n2;
            if (!r2 || !a2 || !n2) { nomem = 1; break; }
        }
        const int32_t *comp = T.pool + T.start[i];
        Py_ssize_t len = T.start[i + 1] - T.start[i];
        int32_t *next_row = acc_next + i * 256, win = DEAD, win_rank = INT32_MAX;
        for (int k = 0; k < 256; k++) next_row[k] = DEAD, best[k] = INT32_MAX;
        memset(count, 0, sizeof(int32_t) * (nclass + 1));
        for (Py_ssize_t j = 0; j < len; j++) {
            int32_t q = comp[j], t = term_of[q];
            for (int64_t e = move_ptr[q]; e < move_ptr[q + 1]; e++) count[move_class[e] + 1]++;
            if (!accepting[q]) continue;
            if (rank[t] < win_rank) win = t, win_rank = rank[t];
            const uint8_t *bytes = before_id[q] >= 0 ? before + (Py_ssize_t)before_id[q] * 256 : NULL;
            for (int k = 0; k < 256; k++)
                if ((!bytes || bytes[k]) && rank[t] < best[k]) best[k] = rank[t], next_row[k] = t;
        }
        acc[i] = win;
        for (Py_ssize_t c = 0; c < nclass; c++) count[c + 1] += count[c];
        memcpy(fill, count, sizeof(int32_t) * (nclass + 1));
        for (Py_ssize_t j = 0; j < len; j++) { /* components in terminal order: each bucket is too */
            int32_t q = comp[j];
            for (int64_t e = move_ptr[q]; e < move_ptr[q + 1]; e++) bucket[fill[move_class[e]]++] = move_to[e];
        }
        int32_t *row = rows + i * nclass;
        for (Py_ssize_t c = 0; c < nclass; c++) {
            Py_ssize_t n = count[c + 1] - count[c];
            if (!n) { row[c] = DEAD; continue; }
            Py_ssize_t known = T.n, id = intern_tuple(&T, bucket + count[c], n);
            if (id < 0) { nomem = 1; break; }
            if (id == known && known >= max_states) { code = 1; break; }
            row[c] = (int32_t)id;
            comp = T.pool + T.start[i]; /* the pool may have moved */
        }
    }
    Py_END_ALLOW_THREADS
    PyObject *result = NULL;
    if (nomem) PyErr_NoMemory();
    else if (code) result = Py_BuildValue("(inOOO)", code, T.n, Py_None, Py_None, Py_None);
    else
        result = Py_BuildValue("(iny#y#y#)", 0, T.n, (char *)rows, T.n * nclass * 4, (char *)acc, T.n * 4,
                               (char *)acc_next, T.n * 256 * 4);
    free(term_of), free(T.pool), free(T.start), free(T.table), free(rows), free(acc), free(acc_next);
    free(count), free(bucket), free(fill), free(tup);
    release(b, PRODUCT_ARGS);
    return result;
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* The epsilon closure of seeds[0..n) in the NFA (eps CSR), sorted, into out; stamp[q] == mark
 * for the states met. Returns its length (out and stack hold every NFA state at most once). */
static Py_ssize_t eps_closure(const int64_t *eps_ptr, const int32_t *eps_to, const int32_t *seeds, Py_ssize_t n,
                              int32_t *stamp, int32_t mark, int32_t *out, int32_t *stack) {
    Py_ssize_t len = 0, top = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (stamp[seeds[i]] != mark) stamp[seeds[i]] = mark, stack[top++] = seeds[i];
    while (top) {
        int32_t u = stack[--top];
        out[len++] = u;
        for (int64_t e = eps_ptr[u]; e < eps_ptr[u + 1]; e++)
            if (stamp[eps_to[e]] != mark) stamp[eps_to[e]] = mark, stack[top++] = eps_to[e];
    }
    qsort(out, len, sizeof(int32_t), cmp_i32);
    return len;
}

#define SUBSETS_ARGS 6
/* subsets(nclass, eps_ptr i64[n+1], eps_to i32, edge_ptr i64[n+1], edge_to i32[m], cls_ptr i64[m+1],
 *         cls i32, start, final, max_states, seconds) -> (code, states, rows, accepting)
 * The subset construction of a plain NFA (byte edges as lists of byte classes, epsilon edges):
 * DFA states are epsilon-closed sets of NFA states, numbered as met, a state's moves in class
 * order (lexer._terminal_dfa's order). code 1 past max_states, 2 past seconds (< 0: none). */
static PyObject *subsets(PyObject *self, PyObject *args) {
    PyObject *o[SUBSETS_ARGS];
    Py_ssize_t nclass, start, final, max_states;
    double seconds;
    if (!PyArg_ParseTuple(args, "nOOOOOOnnnd:subsets", &nclass, &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &start,
                          &final, &max_states, &seconds))
        return NULL;
    static const Py_ssize_t sizes[SUBSETS_ARGS] = {8, 4, 8, 4, 8, 4};
    static const char *names[SUBSETS_ARGS] = {"eps_ptr", "eps_to", "edge_ptr", "edge_to", "cls_ptr", "cls"};
    Buf b[SUBSETS_ARGS];
    if (take_all(o, b, SUBSETS_ARGS, sizes, names, 0) < 0) return NULL;
    const int64_t *eps_ptr = b[0].b.buf, *edge_ptr = b[2].b.buf, *cls_ptr = b[4].b.buf;
    const int32_t *eps_to = b[1].b.buf, *edge_to = b[3].b.buf, *cls = b[5].b.buf;
    Py_ssize_t n = LEN(b[0]) - 1, m = LEN(b[3]);
    int ok = n >= 1 && nclass >= 1 && nclass <= 256 && LEN(b[2]) == n + 1 && LEN(b[4]) == m + 1 && start >= 0 &&
             start < n && final >= 0 && final < n && max_states >= 1 && eps_ptr[0] == 0 && eps_ptr[n] == LEN(b[1]) &&
             edge_ptr[0] == 0 && edge_ptr[n] == m && cls_ptr[0] == 0 && cls_ptr[m] == LEN(b[5]);
    for (Py_ssize_t q = 0; ok && q < n; q++) ok = eps_ptr[q] <= eps_ptr[q + 1] && edge_ptr[q] <= edge_ptr[q + 1];
    for (Py_ssize_t e = 0; ok && e < LEN(b[1]); e++) ok = eps_to[e] >= 0 && eps_to[e] < n;
    for (Py_ssize_t e = 0; ok && e < m; e++) ok = edge_to[e] >= 0 && edge_to[e] < n && cls_ptr[e] <= cls_ptr[e + 1];
    for (Py_ssize_t e = 0; ok && e < LEN(b[5]); e++) ok = cls[e] >= 0 && cls[e] < nclass;
    if (!ok) {
        release(b, SUBSETS_ARGS);
        return PyErr_Format(PyExc_ValueError, "subsets: inconsistent arrays");
    }
    Tuples T = {malloc(sizeof(int32_t) * 4096), malloc(sizeof(int64_t) * 1024), 0, 4096, 1024, NULL, 1024};
    T.table = malloc(sizeof(int32_t) * T.table_cap);
    Py_ssize_t rows_cap = 1024, bucket_cap = 1024;
    int32_t *rows = malloc(sizeof(int32_t) * rows_cap * nclass);
    uint8_t *acc = malloc(rows_cap);
    int32_t *stamp = calloc(n, sizeof(int32_t)), *set = malloc(sizeof(int32_t) * n), *stack = malloc(sizeof(int32_t) * n);
    int32_t *count = malloc(sizeof(int32_t) * (nclass + 1)), *fill = malloc(sizeof(int32_t) * (nclass + 1));
    int32_t *bucket = malloc(sizeof(int32_t) * bucket_cap), seed = (int32_t)start, mark = 0;
    int code = 0, nomem = !T.pool || !T.start || !T.table || !rows || !acc || !stamp || !set || !stack || !count ||
                         !fill || !bucket;
    Py_BEGIN_ALLOW_THREADS
    double deadline = seconds >= 0 ? now_s() + seconds : -1;
    if (!nomem) {
        for (Py_ssize_t k = 0; k < T.table_cap; k++) T.table[k] = -1;
        T.start[0] = 0;
        Py_ssize_t len = eps_closure(eps_ptr, eps_to, &seed, 1, stamp, ++mark, set, stack);
        if (intern_tuple(&T, set, len) < 0) nomem = 1;
    }
    for (Py_ssize_t i = 0; !nomem && !code && i < T.n; i++) {
        if (i % 256 == 0 && deadline >= 0 && now_s() > deadline) { code = 2; break; }
        if (i >= rows_cap) {
            rows_cap *= 2;
            int32_t *r2 = realloc(rows, sizeof(int32_t) * rows_cap * nclass);
            if (r2) rows = r2;
            uint8_t *a2 = realloc(acc, rows_cap);
            if (a2) acc = a2;
            if (!r2 || !a2) { nomem = 1; break; }
        }
        Py_ssize_t len = T.start[i + 1] - T.start[i], total = 0;
        const int32_t *comp = T.pool + T.start[i];
        acc[i] = 0;
        memset(count, 0, sizeof(int32_t) * (nclass + 1));
        for (Py_ssize_t j = 0; j < len; j++) {
            int32_t q = comp[j];
            acc[i] |= q == final;
            for (int64_t e = edge_ptr[q]; e < edge_ptr[q + 1]; e++)
                for (int64_t k = cls_ptr[e]; k < cls_ptr[e + 1]; k++) count[cls[k] + 1]++, total++;
        }
        if (total > bucket_cap) {
            int32_t *more = realloc(bucket, sizeof(int32_t) * total);
            if (!more) { nomem = 1; break; }
            bucket = more, bucket_cap = total;
        }
        for (Py_ssize_t c = 0; c < nclass; c++) count[c + 1] += count[c];
        memcpy(fill, count, sizeof(int32_t) * (nclass + 1));
        for (Py_ssize_t j = 0; j < len; j++) {
            int32_t q = comp[j];
            for (int64_t e = edge_ptr[q]; e < edge_ptr[q + 1]; e++)
                for (int64_t k = cls_ptr[e]; k < cls_ptr[e + 1]; k++) bucket[fill[cls[k]]++] = edge_to[e];
        }
        int32_t *row = rows + i * nclass;
        for (Py_ssize_t c = 0; c < nclass; c++) {
            Py_ssize_t k = count[c + 1] - count[c];
            if (!k) { row[c] = DEAD; continue; }
            Py_ssize_t got = eps_closure(eps_ptr, eps_to, bucket + count[c], k, stamp, ++mark, set, stack);
            Py_ssize_t known = T.n, id = intern_tuple(&T, set, got);
            if (id < 0) { nomem = 1; break; }
            if (id == known && known >= max_states) { code = 1; break; }
            row[c] = (int32_t)id;
        }
    }
    Py_END_ALLOW_THREADS
    PyObject *result = NULL;
    if (nomem) PyErr_NoMemory();
    else if (code) result = Py_BuildValue("(inOO)", code, T.n, Py_None, Py_None);
    else result = Py_BuildValue("(iny#y#)", 0, T.n, (char *)rows, T.n * nclass * 4, (char *)acc, T.n);
    free(T.pool), free(T.start), free(T.table), free(rows), free(acc), free(stamp), free(set), free(stack);
    free(count), free(fill), free(bucket);
    release(b, SUBSETS_ARGS);
    return result;
}

/* refine(trans i32[n*k], k, labels i64[n]) -> blocks
 * The coarsest partition of DFA states (rows of trans over k classes, -1 dead) that refines
 * `labels` and that every class's moves respect (Hopcroft's algorithm; dead moves go to a sink
 * of its own); labels are rewritten as blocks numbered in order of first appearance (state 0's
 * block is 0), which is what Moore's refinement gives too. */
static PyObject *refine(PyObject *self, PyObject *args) {
    PyObject *o[2];
    Py_ssize_t k;
    if (!PyArg_ParseTuple(args, "OnO:refine", &o[0], &k, &o[1])) return NULL;
    Buf b[2];
    memset(b, 0, sizeof b);
    if (take(o[0], &b[0], 4, 0, "trans") < 0 || take(o[1], &b[1], 8, 1, "labels") < 0) {
        release(b, 2);
        return NULL;
    }
    const int32_t *trans = b[0].b.buf;
    int64_t *labels = b[1].b.buf;
    Py_ssize_t n = LEN(b[1]), nl = 0;
    int ok = k >= 1 && LEN(b[0]) == n * k;
    for (Py_ssize_t j = 0; ok && j < n * k; j++) ok = trans[j] >= -1 && trans[j] < n;
    for (Py_ssize_t q = 0; ok && q < n; q++) ok = labels[q] >= 0 && labels[q] < n, nl = labels[q] >= nl ? labels[q] + 1 : nl;
    if (!ok) {
        release(b, 2);
        return PyErr_Format(PyExc_ValueError, "refine: inconsistent arrays");
    }
    Py_ssize_t N = n + 1; /* state n: the sink that dead moves go to */
    int32_t *inv_ptr = calloc(N * k + 1, sizeof(int32_t)), *inv = malloc(sizeof(int32_t) * (N * k + 1));
    int32_t *cursor = malloc(sizeof(int32_t) * (N * k + 1));
    int32_t *elems = malloc(sizeof(int32_t) * N), *pos = malloc(sizeof(int32_t) * N), *block = malloc(sizeof(int32_t) * N);
    Py_ssize_t most = nl + 1 + N; /* blocks: the labels' (some may be empty), the sink's, one per split */
    int32_t *bstart = malloc(sizeof(int32_t) * (most + 1)), *bend = malloc(sizeof(int32_t) * (most + 1));
    int32_t *marked = calloc(most + 1, sizeof(int32_t)), *touched = malloc(sizeof(int32_t) * (most + 1));
    int32_t *work = malloc(sizeof(int32_t) * 2 * (most * k + 1)), *members = malloc(sizeof(int32_t) * N);
    uint8_t *in_work = calloc((most + 1) * k, 1);
    int64_t *first = malloc(sizeof(int64_t) * (most + 1));
    if (!inv_ptr || !inv || !cursor || !elems || !pos || !block || !bstart || !bend || !marked || !touched || !work ||
        !members || !in_work || !first) {
        free(inv_ptr), free(inv), free(cursor), free(elems), free(pos), free(block), free(bstart), free(bend), free(marked);
        free(touched), free(work), free(members), free(in_work), free(first);
        release(b, 2);
        return PyErr_NoMemory();
    }
    Py_ssize_t blocks = 0;
    Py_BEGIN_ALLOW_THREADS
#define MOVE(q, c) ((q) == n ? n : (trans[(q) * k + (c)] >= 0 ? trans[(q) * k + (c)] : n))
    /* predecessors by (class, target): inv[inv_ptr[c * N + t] ..] */
    for (Py_ssize_t q = 0; q < N; q++)
        for (Py_ssize_t c = 0; c < k; c++) inv_ptr[c * N + MOVE(q, c) + 1]++;
    for (Py_ssize_t i = 0; i < N * k; i++) inv_ptr[i + 1] += inv_ptr[i];
    memcpy(cursor, inv_ptr, sizeof(int32_t) * (N * k + 1));
    for (Py_ssize_t q = 0; q < N; q++)
        for (Py_ssize_t c = 0; c < k; c++) inv[cursor[c * N + MOVE(q, c)]++] = (int32_t)q;
    /* initial blocks: the labels, the sink alone after them; states laid out block by block */
    Py_ssize_t nb = nl + 1;
    for (Py_ssize_t i = 0; i <= nb; i++) bstart[i] = 0;
    for (Py_ssize_t q = 0; q < n; q++) bstart[labels[q] + 1]++;
    bstart[nl + 1] = 1;
    for (Py_ssize_t i = 0; i < nb; i++) bstart[i + 1] += bstart[i];
    for (Py_ssize_t i = 0; i < nb; i++) bend[i] = bstart[i];
    for (Py_ssize_t q = 0; q < N; q++) {
        int32_t bl = q == n ? (int32_t)nl : (int32_t)labels[q];
        block[q] = bl, pos[q] = bend[bl], elems[bend[bl]++] = (int32_t)q;
    }
    /* blocks may be empty (labels need not be dense): they never split and cost nothing */
    Py_ssize_t top = 0;
    for (Py_ssize_t bl = 0; bl < nb; bl++)
        if (bend[bl] > bstart[bl])
            for (Py_ssize_t c = 0; c < k; c++) work[top++] = (int32_t)bl, work[top++] = (int32_t)c, in_work[bl * k + c] = 1;
    while (top) {
        int32_t c = work[--top], a = work[--top];
        in_work[(Py_ssize_t)a * k + c] = 0;
        Py_ssize_t m = 0, nt = 0;
        for (int32_t i = bstart[a]; i < bend[a]; i++) members[m++] = elems[i];
        for (Py_ssize_t i = 0; i < m; i++) {
            Py_ssize_t slot = (Py_ssize_t)c * N + members[i];
            for (int32_t e = inv_ptr[slot]; e < inv_ptr[slot + 1]; e++) {
                int32_t q = inv[e], bl = block[q];
                if (pos[q] < bstart[bl] + marked[bl]) continue; /* marked already */
                int32_t to = bstart[bl] + marked[bl], other = elems[to];
                elems[to] = q, elems[pos[q]] = other, pos[other] = pos[q], pos[q] = to;
                if (marked[bl]++ == 0) touched[nt++] = bl;
            }
        }
        for (Py_ssize_t i = 0; i < nt; i++) {
            int32_t bl = touched[i], mk = marked[bl];
            marked[bl] = 0;
            if (mk == bend[bl] - bstart[bl]) continue;
            int32_t nbl = (int32_t)nb++; /* the marked part becomes a block of its own */
            bstart[nbl] = bstart[bl], bend[nbl] = bstart[bl] + mk, bstart[bl] += mk;
            for (int32_t j = bstart[nbl]; j < bend[nbl]; j++) block[elems[j]] = nbl;
            int32_t smaller = bend[nbl] - bstart[nbl] <= bend[bl] - bstart[bl] ? nbl : bl;
            for (Py_ssize_t d = 0; d < k; d++) {
                int32_t add = in_work[(Py_ssize_t)bl * k + d] ? nbl : smaller;
                if (!in_work[(Py_ssize_t)add * k + d])
                    in_work[(Py_ssize_t)add * k + d] = 1, work[top++] = add, work[top++] = (int32_t)d;
            }
        }
    }
    /* blocks numbered in order of first appearance over the real states */
    for (Py_ssize_t i = 0; i < nb; i++) first[i] = -1;
    for (Py_ssize_t q = 0; q < n; q++) {
        if (first[block[q]] < 0) first[block[q]] = blocks++;
        labels[q] = first[block[q]];
    }
#undef MOVE
    Py_END_ALLOW_THREADS
    free(inv_ptr), free(inv), free(cursor), free(elems), free(pos), free(block), free(bstart), free(bend), free(marked);
    free(touched), free(work), free(members), free(in_work), free(first);
    release(b, 2);
    return PyLong_FromSsize_t(blocks);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* utf8_positions(delta i32[Q*256], table i8[D*256], pos i64[Q], mixed u8[Q])
 * The UTF-8 decoder state each DFA state is reached in (lexer.utf8_valid): breadth first from
 * state 0 (pos[0] set by the caller, the others -2), a round at a time as numpy takes them: a
 * state is first met in a round, its decoder state the last of that round's arrivals (in order
 * of source state, then byte); it is mixed where arrivals disagree, in its round or later.
 * pos and mixed are written in place. */
static PyObject *utf8_positions(PyObject *self, PyObject *args) {
    PyObject *o[4];
    if (!PyArg_UnpackTuple(args, "utf8_positions", 4, 4, &o[0], &o[1], &o[2], &o[3])) return NULL;
    static const Py_ssize_t sizes[4] = {4, 1, 8, 1};
    static const char *names[4] = {"delta", "table", "pos", "mixed"};
    Buf b[4];
    if (take_all(o, b, 4, sizes, names, ~0ull << 2) < 0) return NULL;
    const int32_t *delta = b[0].b.buf;
    const int8_t *table = b[1].b.buf;
    int64_t *pos = b[2].b.buf;
    uint8_t *mixed = b[3].b.buf;
    Py_ssize_t q = LEN(b[2]), decoders = LEN(b[1]) / 256;
    const char *bad = LEN(b[0]) != q * 256 || LEN(b[3]) != q || LEN(b[1]) != decoders * 256 || !q ? "array lengths disagree" : NULL;
    for (Py_ssize_t i = 0; !bad && i < q * 256; i++)
        if (delta[i] < DEAD || delta[i] >= q) bad = "a transition outside the states";
    for (Py_ssize_t i = 0; !bad && i < decoders * 256; i++)
        if (table[i] < -1 || table[i] >= decoders) bad = "a decoder state outside the table";
    for (Py_ssize_t i = 0; !bad && i < q; i++)
        if (pos[i] < -2 || pos[i] >= decoders) bad = "a decoder state outside the table";
    if (bad) {
        release(b, 4);
        return PyErr_Format(PyExc_ValueError, "utf8_positions: %s", bad);
    }
    int64_t *frontier = malloc(sizeof(int64_t) * (q + 1)), *next = malloc(sizeof(int64_t) * (q + 1));
    int64_t *round_of = malloc(sizeof(int64_t) * (q + 1));
    if (!frontier || !next || !round_of) {
        free(frontier), free(next), free(round_of);
        release(b, 4);
        return PyErr_NoMemory();
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < q; i++) round_of[i] = pos[i] == -2 ? -1 : 0; /* the round a state was first met in */
    Py_ssize_t size = 0, round = 0;
    for (Py_ssize_t i = 0; i < q; i++) if (pos[i] != -2) frontier[size++] = i;
    while (size) {
        round++;
        Py_ssize_t met = 0;
        for (Py_ssize_t k = 0; k < size; k++) {
            int64_t src = frontier[k], u = pos[src];
            for (int c = 0; c < 256; c++) {
                int64_t t = delta[src * 256 + c];
                if (t == DEAD) continue;
                int64_t nu = u >= 0 ? table[u * 256 + c] : -1;
                if (round_of[t] >= 0 && round_of[t] < round) { /* met in an earlier round */
                    if (pos[t] != nu) mixed[t] = 1;
                } else if (round_of[t] < 0) { /* first arrival */
                    round_of[t] = round, pos[t] = nu, next[met++] = t;
                } else { /* another arrival in this round: the last one stands */
                    if (pos[t] != nu) mixed[t] = 1;
                    pos[t] = nu;
                }
            }
        }
        qsort(next, met, sizeof(int64_t), cmp_i64); /* the next round's sources in ascending order (np.unique) */
        int64_t *swap = frontier;
        frontier = next, next = swap, size = met;
    }
    Py_END_ALLOW_THREADS
    free(frontier), free(next), free(round_of);
    release(b, 4);
    Py_RETURN_NONE;
}

/* closure(src i64[E], dst i64[E], bits u8[Q*W]) -> taken
 * Each state's bits OR-ed with those of every state an edge src -> dst reaches, to the fixpoint,
 * in place (what a state can still become, whether it can still die: lexer._reach_back): a worklist
 * over the reversed edges, so each edge is looked at again only when its target's bits grew.
 * Returns how many states were taken off the worklist. */
static PyObject *closure(PyObject *self, PyObject *args) {
    PyObject *o[3];
    if (!PyArg_UnpackTuple(args, "closure", 3, 3, &o[0], &o[1], &o[2])) return NULL;
    static const Py_ssize_t sizes[3] = {8, 8, 1};
    static const char *names[3] = {"src", "dst", "bits"};
    Buf b[3];
    if (take_all(o, b, 3, sizes, names, 1ull << 2) < 0) return NULL;
    const int64_t *src = b[0].b.buf, *dst = b[1].b.buf;
    uint8_t *bits = b[2].b.buf;
    Py_ssize_t e = LEN(b[0]), q = b[2].b.ndim == 2 ? b[2].b.shape[0] : 0, w = q ? LEN(b[2]) / q : 0;
    const char *bad = LEN(b[1]) != e ? "src and dst lengths disagree" : b[2].b.ndim != 2 ? "bits must be [states, bytes]" : NULL;
    for (Py_ssize_t i = 0; !bad && i < e; i++)
        if (src[i] < 0 || src[i] >= q || dst[i] < 0 || dst[i] >= q) bad = "an edge outside the states";
    if (bad) {
        release(b, 3);
        return PyErr_Format(PyExc_ValueError, "closure: %s", bad);
    }
    int64_t *ptr = calloc(q + 1, sizeof(int64_t)), *pred = malloc(sizeof(int64_t) * (e + 1)),
            *queue = malloc(sizeof(int64_t) * (q + 1));
    uint8_t *queued = malloc(q + 1);
    if (!ptr || !pred || !queue || !queued) {
        free(ptr), free(pred), free(queue), free(queued);
        release(b, 3);
        return PyErr_NoMemory();
    }
    Py_ssize_t taken = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < e; i++) ptr[dst[i] + 1]++; /* predecessors by target, CSR */
    for (Py_ssize_t s = 0; s < q; s++) ptr[s + 1] += ptr[s];
    int64_t *fill = queue; /* (the queue's space holds the fill cursors until the worklist starts) */
    for (Py_ssize_t s = 0; s < q; s++) fill[s] = ptr[s];
    for (Py_ssize_t i = 0; i < e; i++) pred[fill[dst[i]]++] = src[i];
    Py_ssize_t head = 0, size = q; /* a ring of the states whose bits grew, every state at first */
    for (Py_ssize_t s = 0; s < q; s++) queue[s] = s, queued[s] = 1;
    while (size) {
        int64_t s = queue[head];
        head = head + 1 == q ? 0 : head + 1, size--, queued[s] = 0, taken++;
        const uint8_t *from = bits + s * w;
        for (int64_t k = ptr[s]; k < ptr[s + 1]; k++) {
            int64_t p = pred[k];
            uint8_t *to = bits + p * w, grew = 0;
            for (Py_ssize_t j = 0; j < w; j++) grew |= from[j] & ~to[j], to[j] |= from[j];
            if (grew && !queued[p]) {
                Py_ssize_t tail = head + size;
                queue[tail >= q ? tail - q : tail] = p, queued[p] = 1, size++;
            }
        }
    }
    Py_END_ALLOW_THREADS
    free(ptr), free(pred), free(queue), free(queued);
    release(b, 3);
    return PyLong_FromSsize_t(taken);
}

/* gather_bits(flags u8[F], code i32[V], words u32[ceil(V/32)][, simd])
 * Bit t of words (low bit first) set iff flags[code[t]]: a lexer view's status codes looked up
 * in a step's status vector and packed, in one pass (Masker._words). A code outside the flags
 * (never, from a view) reads the last flag: no read outside them. With AVX2 (checked at run
 * time; simd=0 turns it off) eight codes are looked up per instruction, about 5x faster. */
static void gather_words_scalar(const uint8_t *flags, uint32_t last, const int32_t *code, Py_ssize_t full,
                                uint32_t *words) {
    for (Py_ssize_t w = 0; w < full; w++) { /* (flags are numpy bools: 0 or 1) */
        const int32_t *c = code + 32 * w;
        uint32_t word = 0;
        for (int k = 0; k < 32; k++) {
            uint32_t x = (uint32_t)c[k];
            word |= (uint32_t)flags[x < last ? x : last] << k;
        }
        words[w] = word;
    }
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define HAVE_AVX2_PATH 1
/* As gather_words_scalar; ``padded`` holds the flags and 3 readable bytes after them (each
 * lookup reads 4 bytes and keeps bit 0 of the first). */
__attribute__((target("avx2"))) static void gather_words_avx2(const uint8_t *padded, uint32_t last,
                                                              const int32_t *code, Py_ssize_t full, uint32_t *words) {
    const __m256i top = _mm256_set1_epi32((int)last);
    for (Py_ssize_t w = 0; w < full; w++) {
        const int32_t *c = code + 32 * w;
        uint32_t word = 0;
        for (int k = 0; k < 4; k++) {
            __m256i x = _mm256_min_epu32(_mm256_loadu_si256((const __m256i *)(c + 8 * k)), top);
            __m256i g = _mm256_slli_epi32(_mm256_i32gather_epi32((const int *)padded, x, 1), 31);
            word |= (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(g)) << (8 * k);
        }
        words[w] = word;
    }
}
#endif

static PyObject *gather_bits(PyObject *self, PyObject *args) {
    PyObject *o[3];
    int simd = 1;
    if (!PyArg_ParseTuple(args, "OOO|p:gather_bits", &o[0], &o[1], &o[2], &simd)) return NULL;
    static const Py_ssize_t sizes[3] = {1, 4, 4};
    static const char *names[3] = {"flags", "code", "words"};
    Buf b[3];
    if (take_all(o, b, 3, sizes, names, 1ull << 2) < 0) return NULL;
    const uint8_t *flags = b[0].b.buf;
    const int32_t *code = b[1].b.buf;
    uint32_t *words = b[2].b.buf;
    Py_ssize_t nflags = LEN(b[0]), n = LEN(b[1]), nwords = LEN(b[2]);
    if (nwords != (n + 31) / 32) {
        release(b, 3);
        return PyErr_Format(PyExc_ValueError, "gather_bits: %zd words for %zd codes", nwords, n);
    }
    if (n && !nflags) {
        release(b, 3);
        return PyErr_Format(PyExc_ValueError, "gather_bits: no flags for %zd codes", n);
    }
    const uint32_t last = (uint32_t)(nflags - 1); /* codes past the flags read the last (as numpy's clip) */
    Py_ssize_t full = n / 32;
    uint8_t *padded = NULL;
#ifdef HAVE_AVX2_PATH
    if (simd && full && __builtin_cpu_supports("avx2")) {
        padded = PyMem_RawMalloc((size_t)nflags + 4);
        if (!padded) {
            release(b, 3);
            return PyErr_NoMemory();
        }
        memcpy(padded, flags, (size_t)nflags);
        memset(padded + nflags, 0, 4);
    }
#endif
    Py_BEGIN_ALLOW_THREADS
#ifdef HAVE_AVX2_PATH
    if (padded)
        gather_words_avx2(padded, last, code, full, words);
    else
#endif
        gather_words_scalar(flags, last, code, full, words);
    if (full < nwords) {
        uint32_t word = 0;
        for (Py_ssize_t k = 0; k < n - 32 * full; k++) {
            uint32_t x = (uint32_t)code[32 * full + k];
            word |= (uint32_t)flags[x < last ? x : last] << k;
        }
        words[full] = word;
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(padded);
    release(b, 3);
    Py_RETURN_NONE;
}

/* viable_rows(action i32[S*W], W, goto i32[S*N], N, lhs i32[R], rlen i32[R], inserts u8[S or 0],
 *             nl, semicolon, kinds u8[T or 0], ind_nl, indent, dedent, first_column,
 *             edge_ptr i64[nodes+1], edge_term i32[E], edge_child i32[E], rows_ptr i64[E+1], rows i64,
 *             free_ptr i64[nodes+1], free_rows i64, stack i32[L], partial, ok u8[hung], brackets,
 *             levels i32[K]) -> 0, or 1 when a reduction pops below a partial stack
 * Which outcome rows are viable from a parser stack (split.ViableRows.of): the prefix tree of the
 * rows' terminal sequences walked depth first, each terminal fed on the LALR stack (reductions,
 * then its shift); the rows on an edge are viable when its terminal is taken, the free rows of
 * a node when it is reached. With a postlexer's semicolons (nl >= 0), ``nl`` is ``semicolon``
 * where the top state inserts one, else nothing. With an indenter (``kinds``: per lexer terminal
 * 0 plain, 1 an open bracket, 2 a close, 3 a newline at column ``t - first_column``, 4 one past the
 * columns told apart) the stack also holds the bracket depth and the indentation levels, and a
 * newline outside brackets is ``ind_nl`` then an ``indent`` or ``dedent``s (indenter.py's
 * IndentedParser.feed; ANY_COLUMN, a newline at some column, leaves the stack as it is where a
 * newline fits); those stacks are copied per node (a few dozen states) instead of restored.
 * ``stack``: bottom first, its top part only when ``partial`` (then 1 asks for the whole stack).
 * Rows past ``ok`` are not asked for. */
#define LR_ERROR (-1)
#define LR_REDUCE (-2)

typedef struct {
    const int32_t *action, *go, *lhs, *rlen, *edge_term, *edge_child;
    const uint8_t *inserts;
    const int64_t *edge_ptr, *rows_ptr, *rows, *free_ptr, *free_rows;
    int64_t width, ngoto, nstates, nrules, nl, semicolon, hung, partial, nodes, edges, rows_end, free_end;
    uint8_t *ok;
    int32_t *st, *above, *saved; /* the live stack, a feed's pushed states, what walks below overwrote */
    int64_t cap, above_cap, saved_cap, saved_len;
    /* the indenter's: terminal kinds, its terminals, and the copied stacks and levels (arena: LR states) */
    const uint8_t *kinds;
    int64_t nkinds, ind_nl, indent, dedent, first_column;
    int32_t *arena, *lev;
    int64_t arena_cap, lev_cap, arena_top, lev_top;
} RowWalk;

enum { KIND_PLAIN = 0, KIND_OPEN = 1, KIND_CLOSE = 2, KIND_COLUMN = 3, KIND_BAD_COLUMN = 4, KIND_ANY_COLUMN = 5, KIND_BAD };
#define ANY_COLUMN (-10) /* codes.py: the indenter's "a newline at some column", a terminal of the rows */

/* An indented stack: its LR states at arena[st:st+len], its levels at lev[lev:lev+nlev]. */
typedef struct {
    int64_t st, len, lev, nlev, brackets;
} IndStack;

enum { FEED_OK = 0, FEED_REJECTED = 1, FEED_MORE = 2, FEED_BAD = 3, FEED_NOMEM = 4 };

static int grow_i32(int32_t **buf, int64_t *cap, int64_t need) {
    if (need <= *cap) return 0;
    int64_t n = *cap ? *cap : 64;
    while (n < need) n *= 2;
    int32_t *p = realloc(*buf, (size_t)n * sizeof(int32_t));
    if (!p) return -1;
    *buf = p, *cap = n;
    return 0;
}

/* term fed on st[0:len]: the stack becomes st[0:*base] + above[0:*pushed]. */
static int lr_feed(RowWalk *w, int64_t len, int64_t term, int64_t *base, int64_t *pushed) {
    int64_t b = len - 1, na = 1;
    int32_t top = w->st[len - 1];
    if (top < 0 || top >= w->nstates) return FEED_BAD;
    if (term == w->nl) {
        if (!w->inserts[top]) {
            *base = len, *pushed = 0;
            return FEED_OK;
        }
        term = w->semicolon;
    }
    w->above[0] = top;
    for (;;) {
        top = w->above[na - 1];
        if (top < 0 || top >= w->nstates) return FEED_BAD;
        int32_t a = w->action[top * w->width + term];
        if (a >= 0) {
            if (grow_i32(&w->above, &w->above_cap, na + 1) < 0) return FEED_NOMEM;
            w->above[na++] = a;
            *base = b, *pushed = na;
            return FEED_OK;
        }
        if (a == LR_ERROR) return FEED_REJECTED;
        int64_t r = LR_REDUCE - a;
        if (r >= w->nrules || w->rlen[r] < 0 || w->lhs[r] < 0 || w->lhs[r] >= w->ngoto) return FEED_BAD;
        int64_t n = w->rlen[r];
        if (n < na) {
            na -= n;
            top = w->above[na - 1];
        } else {
            b -= n - na;
            na = 0;
            if (b < 1) return w->partial ? FEED_MORE : FEED_BAD; /* the bottom state is never popped */
            top = w->st[b - 1];
        }
        if (top < 0 || top >= w->nstates) return FEED_BAD;
        int32_t g = w->go[top * w->ngoto + w->lhs[r]];
        if (grow_i32(&w->above, &w->above_cap, na + 1) < 0) return FEED_NOMEM;
        w->above[na++] = g;
    }
}

/* rows[lo:hi] marked (the pointers checked against the arrays' ends as they are met). */
static int mark_rows(RowWalk *w, const int64_t *rows, int64_t lo, int64_t hi, int64_t end) {
    if (lo < 0 || lo > hi || hi > end) return FEED_BAD;
    for (int64_t i = lo; i < hi; i++)
        if (rows[i] >= 0 && rows[i] < w->hung) w->ok[rows[i]] = 1;
    return FEED_OK;
}

/* The rows below trie node `node` viable from st[0:len]. */
static int rows_below(RowWalk *w, int64_t node, int64_t len) {
    if (mark_rows(w, w->free_rows, w->free_ptr[node], w->free_ptr[node + 1], w->free_end) != FEED_OK) return FEED_BAD;
    int64_t first = w->edge_ptr[node], last = w->edge_ptr[node + 1];
    if (first < 0 || first > last || last > w->edges) return FEED_BAD;
    for (int64_t e = first; e < last; e++) {
        int64_t base, pushed, term = w->edge_term[e];
        if (term < 0 || term >= w->width) return FEED_BAD;
        int rc = lr_feed(w, len, term, &base, &pushed);
        if (rc == FEED_REJECTED) continue;
        if (rc != FEED_OK) return rc;
        if (mark_rows(w, w->rows, w->rows_ptr[e], w->rows_ptr[e + 1], w->rows_end) != FEED_OK) return FEED_BAD;
        int64_t child = w->edge_child[e];
        if (child < 0) continue;
        if (child >= w->nodes) return FEED_BAD;
        /* the child's stack in place: keep what it overwrites, put it back after */
        int64_t keep = len - base, at = w->saved_len, now = base + pushed;
        if (grow_i32(&w->saved, &w->saved_cap, at + keep) < 0 || grow_i32(&w->st, &w->cap, now) < 0) return FEED_NOMEM;
        memcpy(w->saved + at, w->st + base, (size_t)keep * sizeof(int32_t));
        w->saved_len = at + keep;
        memcpy(w->st + base, w->above, (size_t)pushed * sizeof(int32_t));
        rc = rows_below(w, child, now);
        memcpy(w->st + base, w->saved + at, (size_t)keep * sizeof(int32_t));
        w->saved_len = at;
        if (rc != FEED_OK) return rc;
    }
    return FEED_OK;
}

/* One LR feed of ``term`` on the indented stack ``s``, which lies at the arena's top: in place. */
static int ind_lr(RowWalk *w, IndStack *s, int64_t term) {
    int64_t base, pushed;
    if (term < 0 || term >= w->width) return FEED_BAD;
    w->st = w->arena + s->st;
    int rc = lr_feed(w, s->len, term, &base, &pushed);
    if (rc != FEED_OK) return rc;
    if (grow_i32(&w->arena, &w->arena_cap, s->st + base + pushed) < 0) return FEED_NOMEM;
    memcpy(w->arena + s->st + base, w->above, (size_t)pushed * sizeof(int32_t));
    s->len = base + pushed;
    return FEED_OK;
}

/* ``out``: a copy of ``in`` at the arena's top, with lexer terminal ``term`` fed as the indenter does. */
static int ind_feed(RowWalk *w, const IndStack *in, int64_t term, IndStack *out) {
    int kind = term == ANY_COLUMN ? KIND_ANY_COLUMN : term < 0 || term >= w->nkinds ? KIND_BAD : w->kinds[term];
    if (kind > KIND_ANY_COLUMN) return FEED_BAD;
    *out = (IndStack){w->arena_top, in->len, w->lev_top, in->nlev, in->brackets};
    /* room for the copy, a level more, and the feeds' pushes (grown again as they need) */
    if (grow_i32(&w->arena, &w->arena_cap, out->st + in->len + 64) < 0 ||
        grow_i32(&w->lev, &w->lev_cap, out->lev + in->nlev + 1) < 0)
        return FEED_NOMEM;
    memcpy(w->arena + out->st, w->arena + in->st, (size_t)in->len * sizeof(int32_t));
    memcpy(w->lev + out->lev, w->lev + in->lev, (size_t)in->nlev * sizeof(int32_t));
    int rc = FEED_OK;
    if (kind == KIND_PLAIN)
        rc = ind_lr(w, out, term);
    else if (kind == KIND_ANY_COLUMN) { /* the stack as it is, where a newline at some column fits */
        int64_t base, pushed;
        w->st = w->arena + out->st;
        if (out->brackets == 0) rc = lr_feed(w, out->len, w->ind_nl, &base, &pushed);
    } else if (kind == KIND_OPEN || kind == KIND_CLOSE) {
        if (kind == KIND_CLOSE && out->brackets == 0) return FEED_REJECTED;
        out->brackets += kind == KIND_OPEN ? 1 : -1;
        rc = ind_lr(w, out, term);
    } else if (out->brackets == 0) { /* a newline inside brackets is dropped */
        if (kind == KIND_BAD_COLUMN) return FEED_REJECTED;
        int32_t column = (int32_t)(term - w->first_column), *levels = w->lev + out->lev;
        rc = ind_lr(w, out, w->ind_nl);
        if (rc == FEED_OK && column > levels[out->nlev - 1]) {
            levels[out->nlev++] = column;
            rc = ind_lr(w, out, w->indent);
        } else {
            while (rc == FEED_OK && out->nlev > 1 && column < levels[out->nlev - 1]) {
                out->nlev--;
                rc = ind_lr(w, out, w->dedent);
            }
            if (rc == FEED_OK && column != levels[out->nlev - 1]) rc = FEED_REJECTED;
        }
    }
    w->arena_top = out->st + out->len, w->lev_top = out->lev + out->nlev;
    return rc;
}

/* rows_below for an indented stack: each child's stack is a copy, dropped after its walk. */
static int rows_below_ind(RowWalk *w, int64_t node, const IndStack *s) {
    if (mark_rows(w, w->free_rows, w->free_ptr[node], w->free_ptr[node + 1], w->free_end) != FEED_OK) return FEED_BAD;
    int64_t first = w->edge_ptr[node], last = w->edge_ptr[node + 1];
    if (first < 0 || first > last || last > w->edges) return FEED_BAD;
    for (int64_t e = first; e < last; e++) {
        int64_t arena_top = w->arena_top, lev_top = w->lev_top;
        IndStack out;
        int rc = ind_feed(w, s, w->edge_term[e], &out);
        if (rc == FEED_OK && mark_rows(w, w->rows, w->rows_ptr[e], w->rows_ptr[e + 1], w->rows_end) != FEED_OK)
            rc = FEED_BAD;
        int64_t child = w->edge_child[e];
        if (rc == FEED_OK && child >= 0) rc = child < w->nodes ? rows_below_ind(w, child, &out) : FEED_BAD;
        w->arena_top = arena_top, w->lev_top = lev_top;
        if (rc != FEED_OK && rc != FEED_REJECTED) return rc;
    }
    return FEED_OK;
}

static PyObject *viable_rows(PyObject *self, PyObject *args) {
    enum { ACTION, GOTO, LHS, RLEN, INSERTS, KINDS, EDGE_PTR, EDGE_TERM, EDGE_CHILD, ROWS_PTR, ROWS, FREE_PTR,
           FREE_ROWS, STACK, OK, LEVELS, NARGS };
    PyObject *o[NARGS];
    long long width, ngoto, nl, semicolon, ind_nl, indent, dedent, first_column, brackets;
    int partial;
    if (!PyArg_ParseTuple(args, "OLOLOOOLLOLLLLOOOOOOOOpOLO:viable_rows", &o[ACTION], &width, &o[GOTO], &ngoto,
                          &o[LHS], &o[RLEN], &o[INSERTS], &nl, &semicolon, &o[KINDS], &ind_nl, &indent, &dedent,
                          &first_column, &o[EDGE_PTR], &o[EDGE_TERM], &o[EDGE_CHILD], &o[ROWS_PTR], &o[ROWS],
                          &o[FREE_PTR], &o[FREE_ROWS], &o[STACK], &partial, &o[OK], &brackets, &o[LEVELS]))
        return NULL;
    static const Py_ssize_t sizes[NARGS] = {4, 4, 4, 4, 1, 1, 8, 4, 4, 8, 8, 8, 8, 4, 1, 4};
    static const char *names[NARGS] = {"action",   "goto", "lhs",      "rlen",      "inserts", "kinds",
                                       "edge_ptr", "edge_term", "edge_child", "rows_ptr", "rows", "free_ptr",
                                       "free_rows", "stack", "ok", "levels"};
    Buf b[NARGS];
    if (take_all(o, b, NARGS, sizes, names, 1ull << OK) < 0) return NULL;
    RowWalk w = {0};
    w.action = b[ACTION].b.buf, w.go = b[GOTO].b.buf, w.lhs = b[LHS].b.buf, w.rlen = b[RLEN].b.buf;
    w.inserts = b[INSERTS].b.buf, w.edge_ptr = b[EDGE_PTR].b.buf, w.edge_term = b[EDGE_TERM].b.buf;
    w.edge_child = b[EDGE_CHILD].b.buf, w.rows_ptr = b[ROWS_PTR].b.buf, w.rows = b[ROWS].b.buf;
    w.free_ptr = b[FREE_PTR].b.buf, w.free_rows = b[FREE_ROWS].b.buf, w.ok = b[OK].b.buf;
    w.width = width, w.ngoto = ngoto, w.nl = nl, w.semicolon = semicolon, w.partial = partial, w.hung = LEN(b[OK]);
    w.nstates = width > 0 ? LEN(b[ACTION]) / width : 0, w.nrules = LEN(b[RLEN]);
    int64_t nodes = LEN(b[EDGE_PTR]) - 1, edges = LEN(b[EDGE_TERM]), len = LEN(b[STACK]);
    w.nodes = nodes, w.edges = edges, w.rows_end = LEN(b[ROWS]), w.free_end = LEN(b[FREE_ROWS]);
    const char *bad = NULL;
    if (width <= 0 || ngoto <= 0 || LEN(b[ACTION]) != w.nstates * width || LEN(b[GOTO]) != w.nstates * ngoto ||
        LEN(b[LHS]) != w.nrules)
        bad = "the parse table's shapes disagree";
    else if (nl >= 0 && (LEN(b[INSERTS]) != w.nstates || semicolon < 0 || semicolon >= width || nl >= width))
        bad = "the semicolon inserter's states or terminals are out of range";
    else if (nodes < 1 || LEN(b[FREE_PTR]) != nodes + 1 || LEN(b[EDGE_CHILD]) != edges || LEN(b[ROWS_PTR]) != edges + 1)
        bad = "the trie's arrays disagree";
    else if (LEN(b[KINDS]) && (nl >= 0 || ind_nl < 0 || ind_nl >= width || indent < 0 || indent >= width ||
                               dedent < 0 || dedent >= width || first_column < 0 || brackets < 0 || LEN(b[LEVELS]) < 1))
        bad = "the indenter's terminals, bracket depth or levels are out of range";
    else if (len < 1)
        bad = "an empty stack";
    else if (w.edge_ptr[nodes] != edges || w.rows_ptr[edges] > LEN(b[ROWS]) || w.free_ptr[nodes] > LEN(b[FREE_ROWS]))
        bad = "the trie's pointers pass its arrays";
    if (bad) {
        release(b, NARGS);
        return PyErr_Format(PyExc_ValueError, "viable_rows: %s", bad);
    }
    w.kinds = b[KINDS].b.buf, w.nkinds = LEN(b[KINDS]);
    w.ind_nl = ind_nl, w.indent = indent, w.dedent = dedent, w.first_column = first_column;
    int64_t nlev = LEN(b[LEVELS]);
    int rc = FEED_OK;
    Py_BEGIN_ALLOW_THREADS
    if (grow_i32(&w.above, &w.above_cap, 64) < 0)
        rc = FEED_NOMEM;
    else if (w.nkinds) { /* (w.st then points into the arena) */
        IndStack s = {0, len, 0, nlev, brackets};
        if (grow_i32(&w.arena, &w.arena_cap, 4 * len + 256) < 0 || grow_i32(&w.lev, &w.lev_cap, 4 * nlev + 16) < 0)
            rc = FEED_NOMEM;
        else {
            memcpy(w.arena, b[STACK].b.buf, (size_t)len * sizeof(int32_t));
            memcpy(w.lev, b[LEVELS].b.buf, (size_t)nlev * sizeof(int32_t));
            w.arena_top = len, w.lev_top = nlev;
            rc = rows_below_ind(&w, 0, &s);
        }
    } else if (grow_i32(&w.st, &w.cap, len + 64) < 0)
        rc = FEED_NOMEM;
    else {
        memcpy(w.st, b[STACK].b.buf, (size_t)len * sizeof(int32_t));
        rc = rows_below(&w, 0, len);
    }
    Py_END_ALLOW_THREADS
    if (w.nkinds) w.st = NULL;
    free(w.st), free(w.above), free(w.saved), free(w.arena), free(w.lev);
    release(b, NARGS);
    if (rc == FEED_NOMEM) return PyErr_NoMemory();
    if (rc == FEED_BAD)
        return PyErr_Format(PyExc_ValueError, "viable_rows: a state, rule, goto or trie pointer out of its array's range");
    return PyLong_FromLong(rc == FEED_MORE);
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS, "Walk token-trie subtrees from DFA states (see greatgramma/native.py)."},
    {"walk_kept", walk_kept, METH_VARARGS, "Subtree walks as results, dead strings left out (see greatgramma/native.py)."},
    {"resolve_held", resolve_held, METH_VARARGS, "Held subtree results resolved for an entering state (see greatgramma/native.py)."},
    {"gather_bits", gather_bits, METH_VARARGS, "Status codes looked up and packed into mask words (see greatgramma/native.py)."},
    {"utf8_positions", utf8_positions, METH_VARARGS, "UTF-8 decoder states of a DFA's states (see greatgramma/native.py)."},
    {"closure", closure, METH_VARARGS, "Bits OR-ed backwards along edges to the fixpoint (see greatgramma/native.py)."},
    {"block_codes", block_codes, METH_VARARGS, "Status codes of subtree results (see greatgramma/native.py)."},
    {"suffix_lexemes", suffix_lexemes, METH_VARARGS, "First lexemes of the suffix rows to compute (see greatgramma/native.py)."},
    {"product", product, METH_VARARGS, "The lexer DFA as a product of the terminals' DFAs (see greatgramma/native.py)."},
    {"subsets", subsets, METH_VARARGS, "Subset construction of a plain NFA over byte classes (see greatgramma/native.py)."},
    {"refine", refine, METH_VARARGS, "Partition refinement of a DFA's states (see greatgramma/native.py)."},
    {"viable_rows", viable_rows, METH_VARARGS, "Outcome rows viable from a parser stack (see greatgramma/native.py)."},
    {"intern_rows", intern_rows, METH_VARARGS, "Suffix rows interned, shallowest first (see greatgramma/native.py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", "Compiled maximal-munch loops.", -1, methods};

PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&module); }
