"""What the terminal shows: rich tables, plan views and progress bars over sparkrig's results.

Views only render; the command that shows one does the work. HTML pages of receipts live in
`sparkrig.report`.
"""
