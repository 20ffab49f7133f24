"""Pages of docs/reference/ (scripts/generate_reference.py): each a function -> markdown."""

from reference_pages.nodes import nodes_page
from reference_pages.registries import registries_page
from reference_pages.scenario import scenario_page

__all__ = ["nodes_page", "registries_page", "scenario_page"]
