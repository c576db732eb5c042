"""HTML pages of receipts: the report page, its sections and SVG charts.

Terminal tables and progress bars live in `sparkrig.cli.views`."""
