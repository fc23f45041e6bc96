"""Course tooling for maintainers and instructors: nbgrader configuration, the solutions → notebooks
pipeline, the autograde round trip and the kept wrong answers. Students never import it."""
