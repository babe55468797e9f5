// Loading the site's data files. Everything is fetched lazily and cached: the overview needs
// index.json and detect.json; a chart needs only the series files of the lines it draws.

const cache = new Map();
let build = "";

async function getJSON(path) {
  const url = build ? `${path}?v=${build}` : path;
  if (!cache.has(url)) {
    cache.set(url, fetch(url).then((r) => {
      if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
      return r.json();
    }).catch((e) => { cache.delete(url); throw e; }));
  }
  return cache.get(url);
}

/** data/index.json, with each series' dims decoded into a plain object. */
export async function loadIndex() {
  const index = await getJSON("data/index.json");
  if (!index._decoded) {
    build = index.build || "";
    index.byId = new Map();
    for (const s of index.series) {
      s.dims = {};
      index.dims.forEach((k, j) => { s.dims[k] = index.values[j][s.d[j]]; });
      index.byId.set(s.id, s);
    }
    index._decoded = true;
  }
  return index;
}

export const loadDetect = () => getJSON("data/detect.json");
export const loadReference = () => getJSON("data/reference.json");
export const getAdvice = () => getJSON("data/advice.json");
export const getProfile = (file) => getJSON(`data/profiles/${file}.json`);

/**
 * One series, decoded for charts: absolute times, and the columns of `metric` (loading the
 * latency file only when the metric is not in the main file).
 */
export async function loadSeries(sid, metric = "rps") {
  const s = await getJSON(`data/series/${sid}.json`);
  if (!s.t) {
    const t = new Array(s.n);
    let acc = s.t0;
    for (let i = 0; i < s.n; i++) { acc += s.dt[i]; t[i] = acc; }
    s.t = t;
  }
  if (!s.m[metric] && (s.more || []).includes(metric)) {
    const extra = await getJSON(`data/series/${sid}.latency.json`);
    Object.assign(s.m, extra.m);
  }
  return s;
}

/** Everything the tooltip says about point i of a series. */
export function pointInfo(s, i, commitRepo) {
  const commit = s.commits[s.c[i]] || "";
  const suffix = s.runs[i];
  // A source build names its repository: link there (GitHub or GitLab), or plain text ("").
  const prefix = s.repos && s.r ? s.repos[s.r[i]] : null;
  let commitUrl = null;
  if (commit && typeof prefix === "string") commitUrl = prefix ? prefix + commit : null;
  else if (commit && commitRepo) commitUrl = `https://github.com/${commitRepo}/commit/${commit}`;
  return {
    t: s.t[i],
    commit,
    commitUrl,
    runUrl: suffix || s.run_prefix ? (suffix ? s.run_prefix + suffix : null) : null,
    version: s.versions[s.v[i]] || "",
    env: s.fps[s.fp[i]] || { label: "" },
    valid: s.ok[i] === 1,
    flags: s.flags[s.fl[i]] || [],
  };
}
