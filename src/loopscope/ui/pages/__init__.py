"""The dashboard's pages, one module per page; the list of pages is
:mod:`loopscope.ui.pages.registry`."""
