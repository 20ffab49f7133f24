"""Acoustic modem drivers for acomms (WHOI Micromodem)."""
