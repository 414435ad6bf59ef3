"""What every layer shares of the NATS/JetStream wire: the API error data and classes
(``apierrors``, generated), header blocks (``headers``), ack reply subjects and payloads
(``ackreply``), and the in-process message bus JetStream emits onto (``bus``).
"""
