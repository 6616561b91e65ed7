"""The codes that share integer arrays with real ids (states, terminals, rows), in one table.

Lexer states, terminal ids and outcome rows are >= 0; each negative code below has one meaning
in the arrays it is documented for, and no two codes of one array coincide.

==============  =====  ============================================================================
name            value  meaning (arrays)
==============  =====  ============================================================================
DEAD            -1     no transition, no terminal, no outcome (lexer tables, walk results, rows)
END             -2     outcome row / walk result: no further terminal, ``next`` is the end state
NO_TERM         -3     walk result: the first lexeme ends as an ignored terminal (nothing emitted)
FALLBACK        -4     walk result from an extended state: the lexeme dies before it can end, so
                       it backs up to the entering state's fallback
END_HELD        -5     subtree result: ends inside the lexeme, still holding the entry fallback
END_LA          -6     base subtree result: ends inside the lexeme, holding a fallback inside the
                       string (resolved when the subtree is specialised)
UNKNOWN         -7     suffix rows (``TokenTransducer.suffix``): not computed yet (filled on first use)
ANY_COLUMN      -10    pseudo-terminal of the indenter: "a newline at some column" (lexer states
                       that can still end a newline at every column test it once)
NEWLINE_SEEN    2**40  flag in the column of base walks: counted since a newline in the string
==============  =====  ============================================================================

Parse table actions (``ParseTable.action``): a state ``s >= 0`` shifts to s, ``ERROR`` rejects,
``REDUCE - r`` reduces by rule r (and ``REDUCE - action`` gives r back).
``ParseTable.feed_known`` answers with a known segment, ``REJECTED`` (rejected whatever lies
below) or ``DEPENDS`` (a reduction pops below the known part).
"""

from __future__ import annotations

from typing import Final

DEAD: Final = -1
END: Final = -2
NO_TERM: Final = -3
FALLBACK: Final = -4
END_HELD: Final = -5
END_LA: Final = -6
UNKNOWN: Final = -7
ANY_COLUMN: Final = -10
NEWLINE_SEEN: Final = 1 << 40

ERROR: Final = -1
REDUCE: Final = -2
DEPENDS: Final = None
REJECTED: Final = False
