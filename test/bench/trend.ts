// The trend of a sampled series (the resident set of a soak) and its noise: the least-squares slope and two standard
// errors of it that allow for samples that are not independent. A soak's RSS is a saw-tooth (V8's heap grows and gives
// its growth back at each full collection, about every 18 minutes under churn), so neighbouring samples share their
// error and the textbook standard error, which assumes independence, is several times too narrow. The Newey–West
// estimator (Bartlett weights up to a lag that spans one tooth) widens it to what the saw-tooth can fake: "flat" is a
// slope within that band.

export interface Trend {
  /** Least-squares slope, y units per x unit. */
  readonly slope: number;
  /** Two Newey–West standard errors of the slope (same units); 0 with fewer than three points. */
  readonly noise: number;
}

/** Least-squares slope of y over x with its noise; `lag` is in x units (samples within it share their error). */
export function trendOf(points: ReadonlyArray<readonly [number, number]>, lag: number): Trend {
  const n = points.length;
  if (n < 3) return { slope: 0, noise: 0 };
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (const [x, y] of points) {
    sxy += (x - mx) * (y - my);
    sxx += (x - mx) ** 2;
  }
  if (sxx === 0) return { slope: 0, noise: 0 };
  const slope = sxy / sxx;
  const intercept = my - slope * mx;
  const scores = points.map(([x, y]) => (x - mx) * (y - intercept - slope * x));
  const step = (points[n - 1]![0] - points[0]![0]) / (n - 1);
  const maxLag = step > 0 ? Math.min(n - 1, Math.floor(lag / step)) : 0;
  let variance = scores.reduce((s, u) => s + u * u, 0);
  for (let l = 1; l <= maxLag; l++) {
    let covariance = 0;
    for (let i = l; i < n; i++) covariance += scores[i]! * scores[i - l]!;
    variance += 2 * (1 - l / (maxLag + 1)) * covariance;
  }
  return { slope, noise: (2 * Math.sqrt(Math.max(0, variance))) / sxx };
}
