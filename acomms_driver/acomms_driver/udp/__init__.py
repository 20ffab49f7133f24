"""Narrow IP links (radio, satellite, tether): a rate-limited UDP modem driver and a one-way
silverhammer-style streamer. Protocol parts are ROS-free; the nodes are thin adapters."""
