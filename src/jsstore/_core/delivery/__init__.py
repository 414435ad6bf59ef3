"""The way out of the server: connections, subscriptions, publish plans, pull consumer runs."""
