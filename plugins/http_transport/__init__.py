"""The parts of the built-in HTTP transport (``http:`` hook entries).

The plugin itself (hook implementations and the transport's registration)
is :mod:`rook_plugins.http`; this package holds its pieces, split by concern:

* :mod:`.config`   the ``http:`` entry's schema (marshmallow) and its normal form;
* :mod:`.template` ``{{placeholder}}`` substitution inside structured values;
* :mod:`.client`   one ``httpx.AsyncClient`` per run, retries, size caps;
* :mod:`.sse`      assembling server-sent-event streams into one answer;
* :mod:`.extract`  JMESPath extraction of the hook contract's fields;
* :mod:`.diagnose` clear, redacted messages for failed requests.
"""
