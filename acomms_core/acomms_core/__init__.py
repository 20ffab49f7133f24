"""Transport core of acomms: codecs, message queue, packet dispatch, TDMA."""
