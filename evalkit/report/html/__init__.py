"""evalkit's HTML pages: one self-contained file each, inline SVG and CSS, no script.

- :mod:`~evalkit.report.html.page`: the page shell every report shares
  (CSS, Content-Security-Policy, header, sections, tables, badges); start
  here to build a new page (``tokens --html``).
- :mod:`~evalkit.report.html.svg` and :mod:`~evalkit.report.html.charts`:
  SVG written directly, and the charts (intervals, rates, counts); rendering
  only, they take computed values.
- :mod:`~evalkit.report.html.matrix`: confusion matrices and their change.
- :mod:`~evalkit.report.html.candidate`, :mod:`~evalkit.report.html.compare`,
  :mod:`~evalkit.report.html.score`: the pages of ``gate --html``,
  ``compare --out`` and ``score --out``; :mod:`~evalkit.report.html.tokens`
  the page of ``tokens --html``.

Nothing here imports a plotting library; import the module you need.
"""
