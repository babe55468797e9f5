// Which published figures fit a view. Reference results come from other hardware and
// harnesses, so matching is deliberately approximate: same command and metric, same topology
// and io-threads, and (unless the reader asks for any hardware) the same machine class.

/** Reference marks for the explorer's lines: [{label, value, ref}] (one per figure). */
export function refsForLines(references, lines, metric, mode) {
  if (mode === "off" || !references.length) return [];
  const commands = new Set(lines.map((l) => l.dims.command));
  const out = [];
  for (const ref of references) {
    for (const [command, values] of Object.entries(ref.values)) {
      if (values[metric] == null || !commands.has(command)) continue;
      const fits = lines.some((l) => l.dims.command === command
        && l.dims.topology === ref.dims.topology
        && Number(l.dims.io_threads) === Number(ref.dims.io_threads)
        && (mode === "any" || l.dims.machine_class === ref.machine_class));
      const label = `${ref.group}: ${ref.label}`;
      if (fits) out.push({ label: commands.size > 1 ? `${label} (${command})` : label, value: values[metric], ref });
    }
  }
  return out;
}

/** A reference figure's configuration in one line, for lists and tooltips. */
export function describeRef(ref) {
  const d = ref.dims;
  return [`${ref.engine} ${ref.version}`, ref.machine_class, d.topology, `io-threads ${d.io_threads}`,
    d.pipeline ? `P${d.pipeline}` : null, d.clients ? `${d.clients} clients` : null,
    d.data_size ? `${d.data_size} B` : null, d.tool].filter(Boolean).join(" · ");
}
