"""Looking inside a model or certificate: the text summary and the static HTML view."""
