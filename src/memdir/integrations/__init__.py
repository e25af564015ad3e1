"""memdir inside the frameworks agent developers already use, one module each (its
package installed separately, as an extra): ``memdir.integrations.langgraph``
(a LangGraph ``BaseStore``). The agent SDK examples are in ``examples/``."""
