"""Pure rules, no I/O: the history window, token counting, lexical folding and the
working-memory note's formats and merges. Everything above builds on these; they import only the
vocabulary (:mod:`memvault.model`, :mod:`memvault.errors`)."""
