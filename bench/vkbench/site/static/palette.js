// Okabe–Ito: eight colours that stay distinct for the common colour-vision deficiencies.
// Yellow is darkened so it reads on white. Beyond eight series, dashes tell lines apart, and
// every marker also carries text or a symbol so nothing is told by colour alone.
export const COLORS = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#333333", "#B8A100"];
export const DASHES = [[], [6, 3], [2, 3], [10, 3, 2, 3]];

export function styleFor(i) {
  return { color: COLORS[i % COLORS.length], dash: DASHES[Math.floor(i / COLORS.length) % DASHES.length] };
}

export const REFERENCE_COLOR = "#5b5b5b";
