"""Bringup for acomms: scenarios, lifecycle manager, launch files, demo."""
