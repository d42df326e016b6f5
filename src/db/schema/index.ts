export * from './access'
export * from './events'
export * from './system'
export * from './audience'
