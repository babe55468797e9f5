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

const series = new Map();  // sid -> Promise of the decoded series

/**
 * One series, decoded for charts: its head (data/series/<sid>.json) and then its yearly chunks
 * (data/series/<sid>/<year>.json), concatenated into one set of columns with absolute times, as
 * series_data.combine does. Each chunk has its own dictionaries (commits, versions, flags,
 * fingerprints, repositories); their codes are re-coded into dictionaries merged in first-seen
 * order, so point i of the result is point i of the series (the head's indexes: cp, notes,
 * seg, bounds). The latency chunks are loaded only when `metric` is one of them.
 */
export async function loadSeries(sid, metric = "rps") {
  if (!series.has(sid)) {
    const chunk = (y) => getJSON(`data/series/${sid}/${y}.json`);
    const p = (async () => {
      // index.json names each series' chunk years: fetch them with the head, not after it.
      const years = (await loadIndex()).byId.get(sid)?.y || [];
      const early = new Map(years.map((y) => [y, chunk(y)]));
      const head = await getJSON(`data/series/${sid}.json`);
      return combine(head, await Promise.all(head.chunks.map((c) => early.get(c.y) || chunk(c.y))));
    })();
    series.set(sid, p);
    p.catch(() => series.delete(sid));
  }
  const s = await series.get(sid);
  if (!s.m[metric] && s.more.includes(metric)) {
    if (!s._latency) {
      s._latency = Promise.all(s.chunks.map((c) => (c.lat ? getJSON(`data/series/${sid}/${c.y}.latency.json`) : null)))
        .then((files) => Object.assign(s.m, metricColumns(s.chunks, files, s.more)));
      s._latency.catch(() => { s._latency = null; });
    }
    await s._latency;
  }
  return s;
}

/** A dictionary merged over chunks: code(value) -> its index in values (first seen first). */
function merged() {
  const codes = new Map(), values = [];
  return {
    values,
    code(v) {
      const key = JSON.stringify(v);
      let c = codes.get(key);
      if (c === undefined) { c = values.length; codes.set(key, c); values.push(v); }
      return c;
    },
  };
}

/** {metric: {med, lo, hi}} over every chunk, null where a chunk lacks the metric. */
function metricColumns(chunks, files, names) {
  const out = {};
  for (const m of names) {
    const col = { med: [], lo: [], hi: [] };
    chunks.forEach((c, k) => {
      const own = files[k]?.m?.[m];
      for (const part of ["med", "lo", "hi"]) {
        if (own) for (const v of own[part]) col[part].push(v);
        else for (let i = 0; i < c.n; i++) col[part].push(null);
      }
    });
    out[m] = col;
  }
  return out;
}

function combine(head, files) {
  const n = head.n;
  const t = new Array(n), ok = new Array(n), runs = new Array(n);
  const cols = { fl: new Array(n), c: new Array(n), v: new Array(n), fp: new Array(n), r: new Array(n) };
  const dicts = { fl: merged(), c: merged(), v: merged(), r: merged() };
  const fpIndex = new Map(head.fps.map((f, k) => [f.id, k]));
  let hasRepos = false, at = 0;
  files.forEach((ch) => {
    let acc = ch.t0;
    const recode = {
      fl: ch.flags.map((x) => dicts.fl.code(x)), c: ch.commits.map((x) => dicts.c.code(x)),
      v: ch.versions.map((x) => dicts.v.code(x)), r: (ch.repos || [null]).map((x) => dicts.r.code(x)),
    };
    const fps = ch.fps.map((id) => fpIndex.get(id));
    if (ch.repos) hasRepos = true;
    for (let i = 0; i < ch.n; i++, at++) {
      acc += ch.dt[i];
      t[at] = acc;
      ok[at] = ch.ok[i];
      cols.fl[at] = recode.fl[ch.fl[i]];
      cols.c[at] = recode.c[ch.c[i]];
      cols.v[at] = recode.v[ch.v[i]];
      cols.r[at] = recode.r[ch.r ? ch.r[i] : 0];
      cols.fp[at] = fps[ch.fp[i]];
      runs[at] = ch.runs[i] ? ch.run_prefix + ch.runs[i] : "";
    }
  });
  return {
    id: head.id, n, t, ok, chunks: head.chunks,
    fl: cols.fl, flags: dicts.fl.values, c: cols.c, commits: dicts.c.values, v: cols.v, versions: dicts.v.values,
    fp: cols.fp, fps: head.fps, run_prefix: "", runs,
    ...(hasRepos ? { r: cols.r, repos: dicts.r.values } : {}),
    m: metricColumns(head.chunks, files, head.metrics), more: head.more,
    noise: head.noise, cp: head.cp, notes: head.notes, seg: head.seg, bounds: head.bounds,
  };
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
