// Python's difflib.get_close_matches(word, possibilities, n=1, cutoff=0.6), ported so
// an unknown key gets the same "did you mean" in JavaScript as in
// agilerl/models/validation.py. Keys are short: difflib's junk and popularity heuristics
// (for sequences of 200 items or more) never apply, so they are left out.

/** The longest common block of a[alo:ahi] and b[blo:bhi], as difflib finds it: [i, j, size]. */
function longestMatch(a, b, positions, alo, ahi, blo, bhi) {
  let [bestI, bestJ, bestSize] = [alo, blo, 0];
  let lengths = new Map();
  for (let i = alo; i < ahi; i += 1) {
    const next = new Map();
    for (const j of positions.get(a[i]) ?? []) {
      if (j < blo) continue;
      if (j >= bhi) break;
      const size = (lengths.get(j - 1) ?? 0) + 1;
      next.set(j, size);
      if (size > bestSize) [bestI, bestJ, bestSize] = [i - size + 1, j - size + 1, size];
    }
    lengths = next;
  }
  return [bestI, bestJ, bestSize];
}

/** SequenceMatcher(None, a, b).ratio(), over code points as Python counts them. */
export function ratio(first, second) {
  const [a, b] = [[...first], [...second]];
  const positions = new Map();
  b.forEach((char, index) => positions.set(char, [...(positions.get(char) ?? []), index]));
  let matched = 0;
  const queue = [[0, a.length, 0, b.length]];
  while (queue.length > 0) {
    const [alo, ahi, blo, bhi] = queue.pop();
    const [i, j, size] = longestMatch(a, b, positions, alo, ahi, blo, bhi);
    if (size === 0) continue;
    matched += size;
    if (alo < i && blo < j) queue.push([alo, i, blo, j]);
    if (i + size < ahi && j + size < bhi) queue.push([i + size, ahi, j + size, bhi]);
  }
  const total = a.length + b.length;
  return total === 0 ? 1 : (2 * matched) / total;
}

/**
 * The possibility closest to `word` with a ratio of at least `cutoff`, or undefined.
 * Ties go to the greater string, as heapq.nlargest over (score, string) gives them.
 */
export function closeMatch(word, possibilities, cutoff = 0.6) {
  let best;
  for (const candidate of possibilities) {
    const score = ratio(candidate, word);
    if (score < cutoff) continue;
    if (
      best === undefined ||
      score > best.score ||
      (score === best.score && candidate > best.candidate)
    ) {
      best = { score, candidate };
    }
  }
  return best?.candidate;
}
