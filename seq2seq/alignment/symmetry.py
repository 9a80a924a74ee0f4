"""Symmetrization of two directional alignments: grow-diag-final-and (Koehn et al. 2003; what
Moses' and fast_align's `atools -c grow-diag-final-and` compute). Start from the links both
directions agree on, grow into neighbouring links of either direction that cover a word still
unaligned, then add the links of either direction whose two words are both unaligned."""

from seq2seq.alignment.pharaoh import Link

NEIGHBOURS = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))


def grow_diag_final_and(forward: set[Link], reverse: set[Link]) -> set[Link]:
    """Both sets hold (source word, target word) links of one pair."""
    union = forward | reverse
    links = forward & reverse
    sources = {i for i, _ in links}
    targets = {j for _, j in links}
    grown = True
    while grown:  # grow-diag: until a pass adds nothing
        grown = False
        for i, j in sorted(links):
            for di, dj in NEIGHBOURS:
                candidate = (i + di, j + dj)
                new_word = candidate[0] not in sources or candidate[1] not in targets
                if candidate in union and candidate not in links and new_word:
                    links.add(candidate)
                    sources.add(candidate[0])
                    targets.add(candidate[1])
                    grown = True
    for direction in (forward, reverse):  # final-and
        for i, j in sorted(direction):
            if i not in sources and j not in targets:
                links.add((i, j))
                sources.add(i)
                targets.add(j)
    return links
