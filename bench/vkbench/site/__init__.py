"""The static trend site: ``build_site`` turns a history directory into a self-contained site
for gh-pages (plain JS modules + uPlot, lazily loaded compact data files); ``serve`` serves it
on 127.0.0.1. See docs/site.md."""
